"""The schemas of a run's JSON files (``rosetta.runtime.records``)."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from rosetta.runtime.records import Record


class RngRecord(Record):
    torch: str
    cuda: list[str] | None = None


class ImportedRecord(Record):
    """``checkpoint.json``'s ``imported``: a model ``rosetta import`` brought
    in, where from, in which format, and the search settings it came with
    (``generation_config.json``'s, written back by an export)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    source: str = Field(alias="from")
    format: str
    generation: dict[str, int | float] = Field(default_factory=dict)


class MetaRecord(Record):
    """``checkpoint.json``: what every reader of a checkpoint uses. (Its
    trainer position is checked where it is read back: ``TrainerState``.)"""

    format_version: int
    config: dict[str, Any]
    tokenizers: dict[str, Any]
    sha256: dict[str, str]
    trainer: dict[str, Any] | None = None
    rng: RngRecord | None = None
    rng_ranks: list[RngRecord] | None = None
    optimizer_param_groups: list[dict[str, Any]] | None = None
    grad_scaler: dict[str, Any] | None = None
    averaged: list[str] | None = None
    imported: ImportedRecord | None = None


class IndexRecord(Record):
    """A run's ``checkpoints.json``."""

    checkpoints: list[str]
    latest: str | None = None
    best: str | None = None
    best_score: float | None = None
    metric: str | None = None
