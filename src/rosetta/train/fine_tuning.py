"""``train.init`` (``rosetta train --init RUN``): a run that starts from
another's weights and tokenizers (a model imported with ``rosetta import``,
or one trained here) with a fresh optimizer and schedule: fine-tuning.

The starting run decides the task, the ``model`` section and the tokenizers
(``rosetta.config.starting``): a configuration leaves them out, or writes
what the starting run has. Its tokenizers are written into the new run
before its data is encoded, so its token ids are the ones the weights know."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from rosetta.config.schema import Config
from rosetta.config.starting import ADVICE, STARTING_SECTIONS, first_conflict
from rosetta.errors import RosettaError
from rosetta.runs import checkpoint as ckpt
from rosetta.runs import weights
from rosetta.runs.starting import starting_point
from rosetta.runtime.records import read_checked
from rosetta.train.prepare import TOKENIZER_FILE, TokenizerFile, write_tokenizer_file


def starting_checkpoint(config: Config) -> tuple[Path, dict[str, Any]] | None:
    """The checkpoint ``train.init`` names (a run's best, or the checkpoint
    itself) and its checked metadata; None without ``train.init``."""
    if config.train.init is None:
        return None
    folder = ckpt.resolve_checkpoint(config.train.init)
    meta = ckpt.read_meta(folder)
    stored, tokenizers = starting_point(folder, meta)
    check_same_model(config, stored, folder)
    # a model that tags both sides with their language (NLLB-200, M2M100,
    # mBART-50) knows the corpus's data.src_lang and data.tgt_lang: asked
    # here, before the run's folder is made, not when its corpus is encoded
    tokenizers.tagged(config.data.src_lang, config.data.tgt_lang)
    return folder, meta


def refuse_resuming_an_import(run_dir: Path) -> None:
    """A run made by ``rosetta import`` holds a model, not a training to
    continue: one line that says how to fine-tune it."""
    latest = ckpt.read_index(run_dir).get("latest")
    if not latest:
        return
    meta = ckpt.read_meta(ckpt.inside_run(run_dir, latest), tensors=False)
    if ckpt.imported_record(meta) is not None:
        raise RosettaError(
            f"{run_dir}: a model imported with rosetta import, not a training to "
            f"resume; fine-tune it into a new folder: rosetta train CONFIG "
            f"--init {run_dir} -o NEW_RUN"
        )


def check_same_model(config: Config, stored: dict[str, Any], folder: Path) -> None:
    """The configuration's task, ``model`` section and the tokenizer keys it
    sets are the starting run's, or one line naming the first key that
    differs, a key the configuration set before one left at its default
    (``rosetta.jobs.run_config.load_config`` fills those from the starting run)."""
    written = {"task": config.task} if "task" in config.model_fields_set else {}
    for name in STARTING_SECTIONS:
        section = getattr(config, name)
        values = section.model_dump(mode="json")
        written |= {f"{name}.{key}": values[key] for key in section.model_fields_set}
    model = config.model.model_dump(mode="json")
    every = {"task": config.task} | {f"model.{k}": v for k, v in model.items()}
    sections = type(config).MODEL_SECTIONS or (type(config.model),)
    conflict = first_conflict(written, stored, sections)
    conflict = conflict or first_conflict(every, stored, sections)
    if conflict is not None:
        raise RosettaError(f"train.init {folder}: {conflict}; {ADVICE}")


def write_starting_tokenizers(
    config: Config, run_dir: Path, folder: Path, meta: dict[str, Any]
) -> None:
    """The starting checkpoint's tokenizers as the run's ``tokenizers.json``;
    a run that already has other tokenizers is refused."""
    path = run_dir / TOKENIZER_FILE
    if path.is_file():
        state = read_checked(path, TokenizerFile, "a run's tokenizers file")
        if state["tokenizers"] != meta["tokenizers"]:
            raise RosettaError(
                f"{path}: other tokenizers than train.init's ({folder}); "
                "start the fine-tuning in a new folder"
            )
        return
    write_tokenizer_file(run_dir, config.tokenizer, meta["tokenizers"])


def load_starting_weights(
    model: nn.Module,
    folder: Path,
    device: torch.device,
    upgrade: weights.Upgrade | None,
    log: Any = print,
) -> None:
    weights.load_weights(folder, model, device, upgrade)
    log(f"weights: from {folder} (train.init); optimizer and schedule start afresh")
