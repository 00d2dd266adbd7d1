"""A run's configuration, its ``model`` section one of every family's.

``rosetta.config`` reads a configuration given the model sections to pick
from, and knows no family; here they are those of ``rosetta.families``:

    config = load_config("configs/multi30k-de-en-transformer.yaml",
                         ["train.max_steps=100"])
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rosetta.config import reading
from rosetta.config.schema import Config
from rosetta.families import FAMILIES
from rosetta.runs import checkpoint as ckpt
from rosetta.runs.starting import starting_point

MODEL_SECTIONS = tuple(family.config for family in FAMILIES)


def load_config(path: str | Path, overrides: list[str] | None = None) -> Config:
    """Read a YAML config, apply ``KEY=VALUE`` overrides and validate it; a
    config that starts from another run (``train.init``) without a ``model``
    section has that run's."""
    return reading.load_config(path, MODEL_SECTIONS, overrides, starting_model)


def starting_model(path: Path) -> dict[str, Any]:
    """The ``task``, ``model`` and ``tokenizer`` of the checkpoint ``path``
    names (a run: its best), with its tokenizers' sizes
    (``rosetta.runs.starting``)."""
    # the configuration only: the weights are checked where they are loaded
    folder = ckpt.resolve_checkpoint(path)
    return starting_point(folder, ckpt.read_meta(folder, tensors=False))[0]


def config_from_dict(
    raw: dict[str, Any],
    source: str = "config",
    overridden: frozenset[str] = frozenset(),
    stored: bool = False,
) -> Config:
    """``raw`` (as ``config_to_dict`` writes it, or a YAML file's) validated;
    ``source`` names it in errors (``stored``: in one line, for a
    configuration Rosetta wrote)."""
    return reading.config_from_dict(raw, MODEL_SECTIONS, source, overridden, stored)
