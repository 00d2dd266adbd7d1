"""What a run that starts from a checkpoint (``train.init``) takes from it:
its configuration's ``task``, ``model`` and ``tokenizer`` with its
tokenizers' real sizes (``rosetta.config.starting``), and the tokenizers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rosetta.config.starting import starting_sections
from rosetta.data.tokenizer import TokenizerPair
from rosetta.runs.checkpoint import META_FILE


def starting_point(
    folder: Path, meta: dict[str, Any]
) -> tuple[dict[str, Any], TokenizerPair]:
    """The sections a fine-tuning from the checkpoint ``folder`` (its checked
    metadata ``meta``) is compared with, and the checkpoint's tokenizers."""
    tokenizers = TokenizerPair.from_dict(meta["tokenizers"], str(folder / META_FILE))
    sizes = len(tokenizers.src), len(tokenizers.tgt)
    return starting_sections(meta["config"], sizes), tokenizers
