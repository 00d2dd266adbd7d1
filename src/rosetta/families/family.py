"""What a model family is to the rest of Rosetta: one ``Family`` record.

A family package (``rosetta.families.transformer``, ...) holds its ``model``
section, its model, its builder, its training task and its inference object,
and describes them in one ``FAMILY``; ``rosetta.families`` lists the
families. Everything else (the configuration's ``model`` union, training,
loading a run, the command line, the server, the docs) reads that list, so
nothing outside a family asks which family it has.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

import torch
from torch import nn

from rosetta.config.sections import ModelSection
from rosetta.models.trained import Trained

if TYPE_CHECKING:
    from rosetta.config.schema import Config


@dataclass(frozen=True)
class TrainingSetup:
    """What a family's training task is made from.

    ``data`` is what the family's ``prepare`` returned; ``rank`` and
    ``world_size`` say which of how many training processes this is; ``log``
    prints (on the main process) or does nothing.
    """

    config: Config
    model: nn.Module
    data: Any
    device: torch.device
    run_dir: Path
    rank: int
    world_size: int
    log: Callable[[str], None]


@dataclass(frozen=True)
class Family:
    """One model family.

    Attributes:
        summary: what it is, in a few words (the configuration reference).
        config: its ``model`` section, a ``ModelSection``.
        build: ``(model section, source vocabulary size, target vocabulary
            size, tokenizers=None) -> model``, freshly initialised; a family
            that needs to know its tokens (which are digits) reads them from
            ``tokenizers``, given wherever a run builds its model.
        prepare: ``(config, run folder, log, PrepareOptions) -> data``:
            tokenizers trained or loaded, the corpus encoded.
        training: ``(TrainingSetup, inference) -> task``, what the trainer
            drives (``rosetta.train.task.Task``); validation decodes with
            ``inference``, the family's own (see ``training_task``).
        inference: ``(Trained, precision, packed) -> inference object``: a
            ``TextTranslator`` or a language model. ``packed=False`` decodes
            through the layers only, not a family's fast path (comparison).
    """

    summary: str
    config: type[ModelSection]
    build: Callable[..., nn.Module]
    prepare: Callable[..., Any]
    training: Callable[[TrainingSetup, Callable[..., Any]], Any]
    inference: Callable[[Trained, str, bool], Any]

    @property
    def arch(self) -> str:
        """The name ``model.arch`` gives the family: its section's one value."""
        (name,) = get_args(self.config.model_fields["arch"].annotation)
        return name

    def training_task(self, setup: TrainingSetup) -> Any:
        """The task that trains ``setup.model``, validated with this family's
        inference object."""
        return self.training(setup, self.inference)
