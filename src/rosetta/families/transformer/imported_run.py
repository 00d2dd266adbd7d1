"""A converted model written as an ordinary Rosetta run (what every
``rosetta import hf`` conversion ends with): one checksummed checkpoint
whose record says where the model came from, the tokenizers, the index and
a ``config.yaml`` to start fine-tuning from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import yaml

from rosetta.config.reading import config_to_dict
from rosetta.data.tokenizer import TokenizerPair
from rosetta.runs import checkpoint as ckpt
from rosetta.runs.schemas import ImportedRecord
from rosetta.runtime.atomic import write_json_atomic
from rosetta.train.prepare import write_tokenizer_file

CHECKPOINT = "checkpoint-0000000"
RUN_CONFIG = "config.yaml"  # the run's configuration, for users to start from


def write_imported_run(
    folder: Path,
    config: Any,
    tokenizers: TokenizerPair,
    tensors: dict[str, torch.Tensor],
    imported: ImportedRecord,
) -> None:
    """Fill the empty ``folder`` with the run of ``tensors``."""
    meta = {
        "config": config_to_dict(config),
        "tokenizers": tokenizers.to_dict(),
        "imported": imported.model_dump(by_alias=True),
    }
    (folder / CHECKPOINT).mkdir()
    ckpt.write_checkpoint_files(folder / CHECKPOINT, tensors, None, meta)
    write_tokenizer_file(folder, config.tokenizer, meta["tokenizers"])
    index = {"checkpoints": [CHECKPOINT], "latest": CHECKPOINT, "best": None}
    write_json_atomic(folder / ckpt.INDEX_FILE, index)
    (folder / RUN_CONFIG).write_text(run_config_text(meta["config"], imported.source))


def run_config_text(config: dict[str, Any], source: str) -> str:
    """``config.yaml``: the run's configuration as a start for fine-tuning."""
    header = (
        f"# The configuration of {source}, imported by rosetta import hf.\n"
        "# A fine-tuning configuration needs only data and train sections\n"
        "# (the model section is the starting run's):\n"
        "#   rosetta train FINETUNE.yaml --init RUN_FOLDER -o NEW_RUN\n"
    )
    kept = {key: config[key] for key in ("data", "tokenizer", "model")}
    kept["data"] = {k: v for k, v in kept["data"].items() if v is not None}
    return header + yaml.safe_dump(kept, sort_keys=False)
