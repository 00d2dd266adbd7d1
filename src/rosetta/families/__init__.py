"""The model families, listed once.

A new family is a package beside these holding its ``FAMILY``
(``rosetta.families.family.Family``), and one line in ``FAMILIES``. The first
is the default: a ``model`` section without ``arch`` is a Transformer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rosetta.config.sections import ModelSection
from rosetta.errors import RosettaError
from rosetta.families import nat, rnn, transformer, transformer_xl
from rosetta.families.family import ExportFormat, Family, Importer
from rosetta.runtime.resources import refuse_beyond_memory

if TYPE_CHECKING:
    from torch import nn

FAMILIES: tuple[Family, ...] = (
    transformer.FAMILY,
    rnn.FAMILY,
    nat.FAMILY,
    transformer_xl.FAMILY,
)


def family_of(section: ModelSection) -> Family:
    """The family whose ``model`` section ``section`` is."""
    for family in FAMILIES:
        if family.arch == section.arch:
            return family
    raise ValueError(f"no model family is called {section.arch!r}")


def check_model_fits(
    section: ModelSection,
    src_vocab: int,
    tgt_vocab: int,
    tokenizers: Any = None,
    copies: int = 1,
) -> None:
    """Refuse a model whose weights (``copies`` times: 4 to train it, with
    gradients and Adam's two moments) would not fit in memory, before any
    is allocated: the model is built on PyTorch's ``meta`` device, which
    records shapes and holds no data."""
    from rosetta.nn.meta import on_meta  # here: listing families loads no PyTorch

    try:
        with on_meta():
            model = family_of(section).build(section, src_vocab, tgt_vocab, tokenizers)
    except (RuntimeError, OverflowError, ValueError) as error:
        if "meta" in str(error):  # reads a value (digit tables): cannot be sized
            return
        raise RosettaError(
            f"model: sizes that cannot be built ({type(error).__name__}: {error})"
        ) from None
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    count = sum(p.numel() for p in model.parameters())
    refuse_beyond_memory(
        weights * copies, f"a model of {count:,} parameters ({copies}x its weights)"
    )


def build_model(
    section: ModelSection, src_vocab: int, tgt_vocab: int, tokenizers: Any = None
) -> nn.Module:
    """A freshly initialised model of ``section``'s family (``tokenizers``:
    the run's, for a family that reads its tokens)."""
    return family_of(section).build(section, src_vocab, tgt_vocab, tokenizers)


def all_export_formats() -> tuple[ExportFormat, ...]:
    """Every export format some family names, each once, in the families'
    order (``rosetta.jobs.exports`` exports and loads)."""
    found: dict[str, ExportFormat] = {}
    for family in FAMILIES:
        for export in family.exports:
            found.setdefault(export.name, export)
    return tuple(found.values())


def all_importers() -> tuple[Importer, ...]:
    """Every importer some family names, each once, in the families' order
    (``rosetta.jobs.importers`` imports)."""
    found: dict[str, Importer] = {}
    for family in FAMILIES:
        for importer in family.importers:
            found.setdefault(importer.name, importer)
    return tuple(found.values())


# what ``--engine`` takes: Rosetta's own, and each export format it can load
ENGINES = ("rosetta", *(e.name for e in all_export_formats() if e.load is not None))
