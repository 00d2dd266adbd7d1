"""Fast Transformer decoding as an explicit transform: ``pack_for_inference``.

Search feeds the decoder one token per row and step. ``pack_for_inference``
returns a new model, for inference only, whose decoder computes that step, and
whose output projection the step's logits, on packed weights
(``rosetta.families.transformer.fast.step``); everything else (teacher forcing,
attention weights for display) goes through the layers. Like
``quantize_int8`` it is applied by the caller, once, where a model is made
ready to translate:

    fast = pack_for_inference(model)          # float32
    fast = pack_for_inference(model, torch.bfloat16)  # for bf16 autocast

The result is a snapshot. It is built from a copy of ``model``, so the two
share no tensor: the given model is left exactly as it was, always computes
through its own layers, and nothing done to its weights afterwards (an
optimizer step, ``load_state_dict``, ``copy_``, ``.data =``, ``.to``) can make
it decode differently. To decode with changed weights, pack again; the
trainer packs afresh for every validation. The snapshot itself refuses what
would make its packed weights disagree with its layers: training mode,
loading weights, moving or converting it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from typing import Any, NoReturn

import torch
from torch import nn

from rosetta.errors import RosettaError
from rosetta.families.transformer.fast.step import (
    PackedDecoder,
    PackedVocabulary,
    decoder_step,
    is_packable,
    pack_decoder,
    pack_vocabulary,
)
from rosetta.families.transformer.model import TransformerDecoder
from rosetta.families.transformer.state import TransformerState
from rosetta.interfaces.encoder_decoder import Decoder, EncoderDecoder
from rosetta.runtime.precision import autocast_dtype

SNAPSHOT = (
    "a model packed for inference is a snapshot of the weights it was packed "
    "from; {what} the model itself, then pack it again"
)


def compute_dtype(device: torch.device, weight: torch.Tensor) -> torch.dtype:
    """What the matrix products compute in: autocast's dtype, if on."""
    return autocast_dtype(device.type) or weight.dtype


class Snapshot(nn.Module):
    """A packed part refuses what would make its packed weights disagree with
    its layers: training, moving or converting (the packed weights are no
    module state, so ``.to()`` would leave them behind), loading weights."""

    def train(self, mode: bool = True) -> Snapshot:
        if mode:
            raise RosettaError(SNAPSHOT.format(what="train"))
        return super().train(False)

    def _apply(self, fn: Callable, recurse: bool = True) -> NoReturn:
        raise RosettaError(SNAPSHOT.format(what="move or convert"))

    def _load_from_state_dict(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise RosettaError(SNAPSHOT.format(what="load weights into"))


class PackedTransformerDecoder(Snapshot, Decoder):
    """A Transformer decoder whose one-token steps run on packed weights.

    Args:
        decoder: the decoder whose weights were packed; it is owned here (a
            copy nobody else holds) and computes every other call.
        packed: ``pack_decoder`` of its layers.
    """

    def __init__(self, decoder: TransformerDecoder, packed: PackedDecoder):
        super().__init__()
        self.decoder = decoder
        self.packed = packed

    def init_state(
        self, memory: torch.Tensor, src_mask: torch.Tensor
    ) -> TransformerState:
        return self.decoder.init_state(memory, src_mask)

    def forward(
        self,
        tgt_in: torch.Tensor,
        state: TransformerState,
        tgt_mask: torch.Tensor | None = None,
        need_attention: bool = False,
    ) -> tuple[torch.Tensor, TransformerState]:
        """As ``TransformerDecoder.forward``; one new token, without attention
        weights, in the dtype the weights were packed for, takes the packed
        step."""
        one_token_step = tgt_in.size(1) == 1 and tgt_mask is None and not need_attention
        dtype = compute_dtype(tgt_in.device, self.decoder.embedding.token.weight)
        if not one_token_step or dtype != self.packed.dtype:
            return self.decoder(tgt_in, state, tgt_mask, need_attention)
        decoder = self.decoder
        x = decoder.embedding(tgt_in, offset=state.length)[:, 0]  # (n, d)
        x, cache = decoder_step(
            self.packed, x, state.memory_kv, state.src_mask, state.self_kv, state.group
        )
        features = decoder.final_norm(x).unsqueeze(1)  # (n, 1, d)
        state = replace(state, self_kv=cache, length=state.length + 1, attention=None)
        return features, state


class PackedOutputProjection(Snapshot):
    """An output projection whose one-position calls, (n, d) in the dtype the
    weights were packed for, run on the packed vocabulary; others on the layer.

    Args:
        linear: the projection whose weight was packed; owned here.
        vocabulary: ``pack_vocabulary`` of it.
    """

    def __init__(self, linear: nn.Linear, vocabulary: PackedVocabulary):
        super().__init__()
        self.linear = linear
        self.vocabulary = vocabulary

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        dtype = compute_dtype(features.device, self.linear.weight)
        if features.dim() != 2 or dtype != self.vocabulary.dtype:
            return self.linear(features)
        return self.vocabulary(features)


def can_pack(model: EncoderDecoder) -> bool:
    """A Transformer decoder with fused attention and plain ``nn.Linear`` layers
    (not int8-quantized ones, which have their own fast path), without
    a position scheme whose steps are not at their count (the packed step
    counts positions 0, 1, 2, ... and adds no penalties: distance penalties,
    positions inside numbers)."""
    decoder = model.decoder
    return (
        isinstance(decoder, TransformerDecoder)
        and decoder.positions.steps_by_count
        and all(is_packable(layer) for layer in decoder.layers)
    )


@torch.no_grad()
def pack_for_inference(
    model: EncoderDecoder, dtype: torch.dtype | None = None
) -> EncoderDecoder:
    """A copy of ``model`` in eval mode whose decoder steps on packed weights.

    Args:
        model: the model to decode with; it is not changed.
        dtype: what the packed products compute in: the model's own dtype
            (default), or autocast's (``torch.bfloat16``) to decode under
            ``torch.autocast``. A step run in another dtype goes through the
            layers, which compute the same function, only slower.

    Returns:
        The snapshot (see the module docstring), or ``model`` itself where
        there is nothing to pack: a recurrent model, an int8-quantized one,
        or one with the reference attention, relative positions, distance
        penalties (``alibi``) or positions inside numbers.
    """
    if not can_pack(model):
        return model
    snapshot = copy.deepcopy(model).eval().requires_grad_(False)
    decoder, output_proj = snapshot.decoder, snapshot.output_proj
    dtype = dtype or output_proj.weight.dtype
    return EncoderDecoder(
        snapshot.encoder,
        PackedTransformerDecoder(decoder, pack_decoder(decoder.layers, dtype)),
        PackedOutputProjection(output_proj, pack_vocabulary(output_proj, dtype)),
    ).eval()
