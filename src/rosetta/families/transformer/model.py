"""The Transformer encoder and decoder (``rosetta.interfaces.encoder_decoder``)."""

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
from rosetta.families.transformer.number_positions import NumberPositions
from rosetta.families.transformer.state import TransformerState
from rosetta.interfaces.encoder_decoder import Decoder, Encoder
from rosetta.nn.linear_bias import (
    LinearBiases,
    cross_distances,
    place_distances,
    placed_cross_distances,
    placed_self_distances,
    self_distances,
)


class TransformerEncoder(Encoder):
    """``biases``: distance penalties of the self-attention (``alibi``
    positions, ``rosetta.nn.linear_bias``), or None; ``numbers``: positions
    inside numbers (``abacus``, ``coupled``), or None."""

    def __init__(
        self,
        embedding: TransformerEmbedding,
        layers: list[TransformerEncoderLayer],
        final_norm: nn.Module,
        biases: LinearBiases | None = None,
        numbers: NumberPositions | None = None,
    ):
        super().__init__()
        self.embedding = embedding
        self.layers = nn.ModuleList(layers)
        self.final_norm = final_norm  # LayerNorm in pre-norm, Identity in post-norm
        self.biases = biases
        self.numbers = numbers

    def forward(
        self,
        src: torch.Tensor,
        src_mask: torch.Tensor,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``positions`` (n, S): the tokens' positions, if not 0, 1, 2, ...
        (or those inside numbers, with ``numbers``)."""
        if positions is None and self.numbers is not None:
            positions = self.numbers(src, real=src_mask)
        x = self.embedding(src, positions=positions)  # (n, S, d)
        mask = src_mask[:, None, None, :]  # (n, 1, 1, S): every query sees real keys
        if self.biases is not None:
            length = src.size(1)
            distance = self_distances(length, length, src.device)
            if self.numbers is not None:  # abacus-alibi: digits by place
                distance = place_distances(positions, positions)
            elif positions is not None:  # drawn in training
                distance = placed_self_distances(positions)
        for index, layer in enumerate(self.layers):
            if self.biases is not None:
                x = layer(x, self.biases.bias(index, distance, mask))
            else:
                x = layer(x, mask, positions)
        return self.final_norm(x)


def causal_mask(new: int, total: int, device: torch.device) -> torch.Tensor:
    """(new, total) bool: new position ``p`` (of ``total-new..total-1``) sees 0..p."""
    rows = torch.arange(total - new, total, device=device).unsqueeze(1)
    return torch.arange(total, device=device).unsqueeze(0) <= rows


class TransformerDecoder(Decoder):
    """``self_biases`` / ``cross_biases``: distance penalties of the self- and
    cross-attention (``alibi`` positions, ``rosetta.nn.linear_bias``), or
    None; ``numbers``: positions inside numbers, each token's from the one
    before it (``state.number_position``), or None."""

    def __init__(
        self,
        embedding: TransformerEmbedding,
        layers: list[TransformerDecoderLayer],
        final_norm: nn.Module,
        self_biases: LinearBiases | None = None,
        cross_biases: LinearBiases | None = None,
        numbers: NumberPositions | None = None,
    ):
        super().__init__()
        self.embedding = embedding
        self.layers = nn.ModuleList(layers)
        self.final_norm = final_norm
        self.self_biases = self_biases
        self.cross_biases = cross_biases
        self.numbers = numbers

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
        positions (teacher forcing), if not ``state.length``, +1, +2, ..."""
        new = tgt_in.size(1)
        total = state.length + new
        self_mask: torch.Tensor | None = None
        if new > 1 or tgt_mask is not None:  # a single new token may see everything
            self_mask = causal_mask(new, total, tgt_in.device)  # (t, total)
            if tgt_mask is not None:  # AND the padding mask over target keys
                assert state.length == 0, "padding masks are for teacher forcing"
                self_mask = self_mask & tgt_mask[:, None, None, :]
        number_position = None
        if self.numbers is not None:
            if positions is None:
                positions = self.numbers(tgt_in, state.number_position)
            number_position = positions[:, -1]
        x = self.embedding(tgt_in, offset=state.length, positions=positions)
        self_masks, cross_masks = self.layer_masks(state, new, self_mask, positions)
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
            number_position=number_position,
        )

    def layer_masks(
        self,
        state: TransformerState,
        new: int,
        self_mask: torch.Tensor | None,
        positions: torch.Tensor | None = None,
    ) -> tuple[list[torch.Tensor | None], list[torch.Tensor]]:
        """Every layer's self- and cross-attention masks for ``new`` positions
        after ``state.length``: the shared boolean ones, or with distance
        penalties, each layer's own bias; from the target's ``positions`` and
        ``state.source_positions`` where training drew them, and across
        from the digits' places with positions inside numbers (the decoder's
        own tokens by their order: a sum's digits are its places)."""
        layers = len(self.layers)
        if self.self_biases is None or self.cross_biases is None:
            return [self_mask] * layers, [state.src_mask] * layers
        total = state.length + new
        device = state.src_mask.device
        allowed = torch.ones((), dtype=torch.bool, device=device)
        if self_mask is not None:
            allowed = self_mask
        back = self_distances(new, total, device)
        heads = self.layers[0].cross_attn.heads
        src_mask = state.src_mask[:, 0, 0]
        across = cross_distances(state.length, new, src_mask, heads)
        source = state.source_positions
        by_place = self.numbers is not None and positions is not None
        if by_place and source is not None:
            # abacus-alibi: the digits' places across; a sentence's beams are
            # its queries, one run each: (n, new) -> (m, group * new)
            grouped = positions.reshape(source.size(0), -1)
            across = place_distances(grouped, source)
        elif positions is not None and source is not None:
            back = placed_self_distances(positions)
            across = placed_cross_distances(positions, source, src_mask, heads)
        if state.group > 1 and new > 1 and not by_place:
            across = across.repeat(1, 1, state.group, 1)
        return (
            [self.self_biases.bias(i, back, allowed) for i in range(layers)],
            [self.cross_biases.bias(i, across, state.src_mask) for i in range(layers)],
        )
