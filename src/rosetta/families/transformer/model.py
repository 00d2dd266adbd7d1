"""The Transformer encoder and decoder (``rosetta.interfaces.encoder_decoder``),
and the model that joins them with their position scheme (``positions``)."""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import nn

from rosetta.families.transformer.kv_cache import KeyValueCache
from rosetta.families.transformer.layers import (
    TransformerDecoderLayer,
    TransformerEmbedding,
    TransformerEncoderLayer,
)
from rosetta.families.transformer.positions.base import (
    DecoderPositions,
    EncoderPositions,
    PositionScheme,
)
from rosetta.families.transformer.state import TransformerState
from rosetta.interfaces.encoder_decoder import (
    Decoder,
    Encoder,
    EncoderDecoder,
    Memory,
)


class TransformerEncoder(Encoder):
    """``positions``: the scheme's part, which places the tokens and makes
    each layer's mask (``positions.base.EncoderPositions``)."""

    def __init__(
        self,
        embedding: TransformerEmbedding,
        layers: list[TransformerEncoderLayer],
        final_norm: nn.Module,
        positions: EncoderPositions | None = None,
    ):
        super().__init__()
        self.embedding = embedding
        self.layers = nn.ModuleList(layers)
        self.final_norm = final_norm  # LayerNorm in pre-norm, Identity in post-norm
        self.positions = positions or EncoderPositions()

    def forward(
        self,
        src: torch.Tensor,
        src_mask: torch.Tensor,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``positions`` (n, S): the tokens' positions, if not those the
        scheme gives (0, 1, 2, ..., or the places of digits)."""
        positions = self.positions.place(src, src_mask, positions)
        x = self.embedding(src, positions=positions)  # (n, S, d)
        mask = src_mask[:, None, None, :]  # (n, 1, 1, S): every query sees real keys
        masks = self.positions.masks(len(self.layers), src.size(1), mask, positions)
        for layer, layer_mask in zip(self.layers, masks, strict=True):
            x = layer(x, layer_mask, positions)
        return self.final_norm(x)


def causal_mask(new: int, total: int, device: torch.device) -> torch.Tensor:
    """(new, total) bool: new position ``p`` (of ``total-new..total-1``) sees 0..p."""
    rows = torch.arange(total - new, total, device=device).unsqueeze(1)
    return torch.arange(total, device=device).unsqueeze(0) <= rows


class TransformerDecoder(Decoder):
    """``positions``: the scheme's part, which places the new tokens, makes
    each layer's self- and cross-attention masks and says what a step hands
    the next (``positions.base.DecoderPositions``)."""

    def __init__(
        self,
        embedding: TransformerEmbedding,
        layers: list[TransformerDecoderLayer],
        final_norm: nn.Module,
        positions: DecoderPositions | None = None,
    ):
        super().__init__()
        self.embedding = embedding
        self.layers = nn.ModuleList(layers)
        self.final_norm = final_norm
        self.positions = positions or DecoderPositions()

    def init_state(
        self, memory: torch.Tensor, src_mask: torch.Tensor
    ) -> TransformerState:
        memory_kv = [
            layer.cross_attn.project_key_value(memory, memory) for layer in self.layers
        ]
        return TransformerState(src_mask[:, None, None, :], memory_kv, None, 0)

    def forward(
        self,
        tgt_in: torch.Tensor,
        state: TransformerState,
        tgt_mask: torch.Tensor | None = None,
        need_attention: bool = False,
        positions: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, TransformerState]:
        """As ``Decoder.forward``; ``positions`` (n, T) are the tokens'
        positions (teacher forcing), if not those the scheme gives."""
        new = tgt_in.size(1)
        total = state.length + new
        self_mask: torch.Tensor | None = None
        if new > 1 or tgt_mask is not None:  # a single new token may see everything
            self_mask = causal_mask(new, total, tgt_in.device)  # (t, total)
            if tgt_mask is not None:  # AND the padding mask over target keys
                assert state.length == 0, "padding masks are for teacher forcing"
                self_mask = self_mask & tgt_mask[:, None, None, :]
        positions = self.positions.place(tgt_in, state, positions)
        x = self.embedding(tgt_in, offset=state.length, positions=positions)
        heads = self.layers[0].cross_attn.heads
        self_masks, cross_masks = self.positions.masks(
            len(self.layers), heads, state, new, self_mask, positions
        )
        cache = None if state.self_kv is None else state.self_kv.extend(new)
        first_keys_values, weights = [], []
        for i, layer in enumerate(self.layers):
            x, kv, w = layer(
                x,
                state.memory_kv[i],
                cross_masks[i],
                self_masks[i],
                cache,
                i,
                need_attention,
                state.group,
                positions,
            )
            first_keys_values.append(kv)
            weights.append(w)
        if cache is None and tgt_mask is None:  # decoding goes on from here
            cache = KeyValueCache.from_pairs(first_keys_values)
        x = self.final_norm(x)  # (n, t, d)
        attention = None
        if need_attention:  # per layer (n, heads, t, S) -> (n, t, layers, heads, S)
            attention = torch.stack(weights, dim=1).permute(0, 3, 1, 2, 4)
        return x, replace(
            state,
            self_kv=cache,
            length=total,
            attention=attention,
            carried=self.positions.carried(positions),
        )


class Transformer(EncoderDecoder):
    """The encoder, the decoder and the output projection, and ``scheme``,
    their position scheme: in training, it may place every sentence pair at
    positions of its own (``PositionScheme.training_positions``); outside
    training (validation, search) the encoder and decoder place their
    tokens themselves. Where the scheme's encoder part keeps something of
    the source (the digits' places), ``encode`` hands it to the decoder's
    state with the memory."""

    def __init__(
        self,
        encoder: TransformerEncoder,
        decoder: TransformerDecoder,
        output_proj: nn.Module,
        scheme: PositionScheme,
    ):
        super().__init__(encoder, decoder, output_proj)
        self.scheme = scheme

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> Memory:
        """The memory, and the source's places (n, S) where the scheme keeps
        them."""
        memory = self.encoder(src, src_mask)
        kept = self.encoder.positions.kept(src, src_mask)
        return memory if kept is None else (memory, kept)

    def init_state(self, memory: Memory, src_mask: torch.Tensor) -> TransformerState:
        if not isinstance(memory, tuple):
            return self.decoder.init_state(memory, src_mask)
        memory, kept = memory
        state = self.decoder.init_state(memory, src_mask)
        return replace(state, source_positions=kept)

    def forward(
        self,
        src: torch.Tensor,
        src_mask: torch.Tensor,
        tgt_in: torch.Tensor,
        tgt_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        if self.training:
            placed = self.training_positions(src, src_mask, tgt_in)
            if placed is not None:
                return self.forward_placed(src, src_mask, tgt_in, *placed, tgt_mask)
        return super().forward(src, src_mask, tgt_in, tgt_mask)

    def training_positions(
        self, src: torch.Tensor, src_mask: torch.Tensor, tgt_in: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The source's (n, S) and the target's (n, T) positions in training,
        or None for those of decoding: the scheme's."""
        return self.scheme.training_positions(self, src, src_mask, tgt_in)

    def forward_placed(
        self,
        src: torch.Tensor,
        src_mask: torch.Tensor,
        tgt_in: torch.Tensor,
        source: torch.Tensor,
        target: torch.Tensor,
        tgt_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Teacher-forced features with the source's (n, S) and the target's
        (n, T) positions given: the training forward, at positions of one's
        choosing (``benchmarks/number_places.py`` moves test pairs with it)."""
        memory = self.encoder(src, src_mask, source)
        state = self.decoder.init_state(memory, src_mask)
        state = replace(state, source_positions=source)
        features, _ = self.decoder(tgt_in, state, tgt_mask, positions=target)
        return features
