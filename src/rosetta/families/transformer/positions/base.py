"""What a position scheme is: ``PositionScheme``, and the parts it gives
each side of a Transformer (``EncoderPositions``, ``DecoderPositions``).

The encoder and decoder have one path for every scheme: they ask their part
where the tokens are (``place``), which masks or distance penalties each
layer's attentions take (``masks``), and the decoder what a decoding step
hands the next (``carried``). The builder asks the scheme which embeddings
add a position table, whether self-attention scores distances, and for the
two parts; the model asks it which positions training draws; the exports
and the fast decoding paths ask it what they can compute.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

import torch
from torch import nn

from rosetta.families.transformer.positions import listed

if TYPE_CHECKING:
    from rosetta.families.transformer.config import TransformerConfig
    from rosetta.families.transformer.state import TransformerState
    from rosetta.interfaces.encoder_decoder import EncoderDecoder

# the export layouts a scheme may be written in: CTranslate2's Transformer,
# and Hugging Face's MarianMT, M2M100 (and NLLB-200) and mBART
EXPORT_LAYOUTS = ("ctranslate2", "marian", "m2m100", "mbart")


class EncoderPositions(nn.Module):
    """The encoder's part of a scheme; as it is, tokens at ``0, 1, 2, ...``
    (or at the positions training gives) and the padding mask alone."""

    def place(
        self, tokens: torch.Tensor, real: torch.Tensor, given: torch.Tensor | None
    ) -> torch.Tensor | None:
        """The tokens' (n, S) positions: ``given`` (training's), or None for
        ``0, 1, 2, ...``; ``real`` (n, S) marks the tokens that are not padding."""
        return given

    def kept(self, tokens: torch.Tensor, real: torch.Tensor) -> torch.Tensor | None:
        """What of the source the decoder's state keeps (n, S), or None."""
        return None

    def masks(
        self,
        layers: int,
        length: int,
        mask: torch.Tensor,
        positions: torch.Tensor | None,
    ) -> list[torch.Tensor]:
        """Each layer's self-attention mask: the padding ``mask`` (n, 1, 1, S),
        or an additive bias made from it."""
        return [mask] * layers


class DecoderPositions(nn.Module):
    """The decoder's part of a scheme; as it is, tokens at ``state.length``,
    +1, +2, ... (or at training's positions) and the boolean masks alone."""

    # a step's position is the count of tokens before it and the attentions
    # take no penalties: what the packed and compiled one-token steps compute
    steps_by_count = True

    def place(
        self,
        tokens: torch.Tensor,
        state: TransformerState,
        given: torch.Tensor | None,
    ) -> torch.Tensor | None:
        """The new tokens' (n, t) positions: ``given``, or None for
        ``state.length``, +1, +2, ..."""
        return given

    def carried(self, positions: torch.Tensor | None) -> torch.Tensor | None:
        """What the next step continues from (``state.carried``), or None."""
        return None

    def masks(
        self,
        layers: int,
        heads: int,
        state: TransformerState,
        new: int,
        self_mask: torch.Tensor | None,
        positions: torch.Tensor | None,
    ) -> tuple[list[torch.Tensor | None], list[torch.Tensor]]:
        """Every layer's self- and cross-attention masks for ``new`` tokens
        after ``state.length``: the causal one, and the source's padding."""
        return [self_mask] * layers, [state.src_mask] * layers


class PositionScheme:
    """One ``model.positions`` value (a module of this package holds it as
    ``SCHEME``). The attributes say how it embeds; the methods give the
    parts and the positions of training. As it is: sinusoids added to both
    embeddings at ``0, 1, 2, ...``, exported nowhere."""

    encoder_adds = True  # the encoder's embedding adds a position table
    decoder_adds = True  # and the decoder's
    own_tables = False  # each side learns its own table instead of sinusoids
    relative = False  # self-attention scores distances (Transformer-XL)
    needs_digits = False  # places digits inside numbers: needs the vocabularies'
    exports: frozenset[str] = frozenset()  # of EXPORT_LAYOUTS, those that hold it
    # why CTranslate2's Transformer cannot compute it, where it cannot
    ctranslate2_refusal = "CTranslate2 adds sinusoidal positions to both sides"

    def exports_to(self, layout: str) -> bool:
        """Whether an export in ``layout`` (one of ``EXPORT_LAYOUTS``) computes
        these positions."""
        if layout not in EXPORT_LAYOUTS:
            raise ValueError(f"export layout {layout!r}: one of {EXPORT_LAYOUTS}")
        return layout in self.exports

    def shared_table(self, section: TransformerConfig) -> nn.Parameter | None:
        """A learned table both sides add, or None (made before the
        embeddings: its draw comes first from the seed)."""
        return None

    def own_table(self, section: TransformerConfig) -> nn.Parameter | None:
        """A side's own learned table (with ``own_tables``), or None."""
        return None

    def encoder_positions(
        self, section: TransformerConfig, digits: torch.Tensor | None
    ) -> EncoderPositions:
        """The encoder's part; ``digits`` (V,) marks the source's digits."""
        return EncoderPositions()

    def decoder_positions(
        self, section: TransformerConfig, digits: torch.Tensor | None
    ) -> DecoderPositions:
        """The decoder's part; ``digits`` (V,) marks the target's digits."""
        return DecoderPositions()

    def training_positions(
        self,
        model: EncoderDecoder,
        src: torch.Tensor,
        src_mask: torch.Tensor,
        tgt_in: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The source's (n, S) and the target's (n, T) positions of a
        training batch, or None: they are those of decoding."""
        return None


def scheme_of(name: str) -> PositionScheme:
    """The scheme ``model.positions`` names, its module imported now."""
    return import_module(listed(name).module).SCHEME
