"""``rosetta export hf``: a run as a Hugging Face transformers folder, in the
layout its model section has: NLLB-200's, M2M100's or mBART-50's (a decoder
that starts from ``</s>``; ``rosetta.families.transformer.hf.multilingual``)
or MarianMT's (``rosetta.families.transformer.hf.marian``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rosetta.families.transformer.hf.marian.exporter import write_marian
from rosetta.families.transformer.hf.multilingual.exporter import write_multilingual


def write_hf(restored: Any, folder: Path, quantization: str | None) -> None:
    """The checkpoint ``restored`` as a transformers folder in the empty
    ``folder``."""
    if restored.config.model.start_token == "eos":
        write_multilingual(restored, folder, quantization)
    else:
        write_marian(restored, folder, quantization)
