"""Small Transformers for tests: ``build_transformer`` from keys of the
model section, by name, as a configuration gives them."""

from __future__ import annotations

from typing import Any

import torch

from rosetta.families.transformer.build import build_transformer
from rosetta.families.transformer.config import TransformerConfig
from rosetta.families.transformer.model import Transformer
from rosetta.families.transformer.positions.base import scheme_of


def transformer(
    src_vocab: int,
    tgt_vocab: int,
    digits: tuple[torch.Tensor, torch.Tensor] | None = None,
    norm_first: bool = False,
    **keys: Any,
) -> Transformer:
    """The model section of ``keys`` (the section's defaults for the rest,
    but no shared embeddings unless asked: the vocabularies may differ),
    with the scheme its ``positions`` names; ``norm_first``: ``norm: pre``."""
    keys = {"share_embeddings": False, **keys}
    if norm_first:
        keys["norm"] = "pre"
    section = TransformerConfig(**keys)
    return build_transformer(
        section, scheme_of(section.positions), src_vocab, tgt_vocab, digits
    )
