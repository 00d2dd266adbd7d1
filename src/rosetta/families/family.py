"""What a model family is to the rest of Rosetta: one ``Family`` record.

A family package (``rosetta.families.transformer``, ...) holds its ``model``
section, its model and its builder, and its own training task and inference
object where the shared ones do not fit (the encoder-decoders' and the
language models' live in ``rosetta.train`` and ``rosetta.inference``); it
describes them in one ``FAMILY``; ``rosetta.families`` lists the
families. Everything else (the configuration's ``model`` union, training,
loading a run, the command line, the server, the docs) reads that list, so
nothing outside a family asks which family it has.

A record names its family's code without importing it (``Later``): listing
the families, as the command line's help and the configuration do, loads
no PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rosetta.config.sections import ModelSection

if TYPE_CHECKING:
    import torch
    from torch import nn

    from rosetta.interfaces.trained import Trained
    from rosetta.train.training_task import TrainingSetup


@dataclass(frozen=True)
class Later:
    """The function ``name`` of ``module``, imported when first called."""

    module: str
    name: str

    def resolve(self) -> Callable[..., Any]:
        return getattr(import_module(self.module), self.name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)


@dataclass(frozen=True)
class ExportFormat:
    """The format of another toolkit the models of the families whose record
    names it can be exported to: ``rosetta export NAME`` writes a model in
    it; a format with a ``load`` is also an engine, which ``--engine NAME``
    translates with (``rosetta.jobs.exports`` does the checks and the
    writing they share).

    Attributes:
        name: its name on the command line.
        summary: what it is and how to install it (the command's help).
        marker: the file an export for it holds, which makes a folder one.
        kind: what an export is called in messages and records.
        quantizations: the weight types an export may take (None: float32).
        write: ``(restored, folder, quantization)``: the restored checkpoint
            (``rosetta.jobs.restore.Restored``) written into ``folder``,
            an empty temporary folder renamed into place afterwards.
        load: ``(folder, device type, precision, threads) -> TextTranslator``
            of an export; None for a format Rosetta exports to but does not
            decode with (its users load the export themselves).
    """

    name: str
    summary: str
    marker: str
    kind: str
    quantizations: tuple[str, ...]
    write: Callable[[Any, Path, str | None], None]
    load: Callable[[Path, str, str, int], Any] | None = None


@dataclass(frozen=True)
class Importer:
    """Models of another toolkit brought in as runs of the family whose
    record names it: ``rosetta import NAME SOURCE -o RUN``
    (``rosetta.jobs.importers`` claims the output, writes it all or
    nothing and loads it back before it takes its place).

    Attributes:
        name: its name on the command line.
        summary: what it reads (the command's help).
        source: what SOURCE is (its help).
        write: ``(source, folder, log)``: the run of ``source`` written into
            ``folder``, an empty temporary folder.
    """

    name: str
    summary: str
    source: str
    write: Callable[[str, Path, Callable[[str], None]], None]


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
            drives (``rosetta.train.training_task.TrainingTask``); validation
            decodes with ``inference``, the family's own (see
            ``training_task``).
        inference: ``(Trained, precision, packed, compiled) -> inference
            object``: a ``TextTranslator`` or a language model.
            ``packed=False`` decodes through the layers only, not a family's
            fast path (comparison); ``compiled`` (True, False, ``"auto"``:
            on a GPU) asks for a family's compiled decoding step, where it
            has one.

    What only some families have (empty or as-is by default):

    Attributes:
        exports: the formats of other toolkits its models can be exported
            to (those with a ``load`` are engines ``--engine`` runs).
        importers: the other toolkits whose models it can import.
        run_files: the files and folders (names ending in ``/``) its
            ``prepare`` writes into a run folder before the first checkpoint.
        upgrade_weights: ``(stored tensors) -> tensors``: a checkpoint of an
            earlier Rosetta with the names this model holds now.
        compiles: its training update compiles as one graph of any batch
            shape (tested), so ``train.compile: auto`` compiles it on a GPU;
            ``true`` tries any family (a graph break is a warning, then
            eager).
        example: a tiny ``model`` section of the family (a few layers of a
            few units, for a vocabulary of tokens not shared), what the tests
            of every family train.
    """

    summary: str
    config: type[ModelSection]
    build: Callable[..., nn.Module]
    prepare: Callable[..., Any]
    training: Callable[[TrainingSetup, Callable[..., Any]], Any]
    inference: Callable[[Trained, str, bool], Any]
    exports: tuple[ExportFormat, ...] = ()
    importers: tuple[Importer, ...] = ()
    run_files: tuple[str, ...] = ()
    example: Mapping[str, Any] = field(default_factory=dict)
    upgrade_weights: (
        Callable[[dict[str, torch.Tensor]], dict[str, torch.Tensor]] | None
    ) = None
    compiles: bool = False

    @property
    def arch(self) -> str:
        """The name ``model.arch`` gives the family: its section's one value."""
        return self.config.arch_name()

    def training_task(self, setup: TrainingSetup) -> Any:
        """The task that trains ``setup.model``, validated with this family's
        inference object."""
        return self.training(setup, self.inference)
