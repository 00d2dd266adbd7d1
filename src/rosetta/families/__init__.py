"""The model families, listed once.

A new family is a package beside these holding its ``FAMILY``
(``rosetta.families.family.Family``), and one line in ``FAMILIES``. The first
is the default: a ``model`` section without ``arch`` is a Transformer.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from rosetta.config.sections import ModelSection
from rosetta.families import language_model, nat, rnn, transformer
from rosetta.families.family import Family

FAMILIES: tuple[Family, ...] = (
    transformer.FAMILY,
    rnn.FAMILY,
    nat.FAMILY,
    language_model.FAMILY,
)


def family_of(section: ModelSection) -> Family:
    """The family whose ``model`` section ``section`` is."""
    for family in FAMILIES:
        if family.arch == section.arch:
            return family
    raise ValueError(f"no model family is called {section.arch!r}")


def build_model(
    section: ModelSection, src_vocab: int, tgt_vocab: int, tokenizers: Any = None
) -> nn.Module:
    """A freshly initialised model of ``section``'s family (``tokenizers``:
    the run's, for a family that reads its tokens)."""
    return family_of(section).build(section, src_vocab, tgt_vocab, tokenizers)
