"""The Transformer decoder's one-token step at inference, on packed weights.

Search feeds the decoder one new token per row and step. This module computes
that step with the formulas of ``TransformerDecoderLayer`` but
with fewer, larger operations, which is what a step at a few dozen rows is
short of:

- the self-attention's query, key and value projections are one matrix
  product, their three weights side by side (``W^Q | W^K | W^V``);
- every weight is kept transposed and contiguous, (d_in, d_out), the layout
  the CPU's BLAS multiplies fastest when there are few rows;
- the vocabulary product, the step's largest, is kept in both layouts, W as
  stored (V, d) and W^T, and computed in the one the CPU's BLAS multiplies
  fastest at the step's row count (``PackedVocabulary``);
- no module calls and no dropout (inference), the residual added in place;
- the new position's keys and values are written into the state's
  ``KeyValueCache`` in place, not concatenated to the earlier ones
  (``rosetta.families.transformer.kv_cache``);
- under autocast (``--precision bf16``) the weights are packed in autocast's
  dtype once, where autocast would convert every weight at every product
  (the vocabulary's 8 MB too); the residual stream and the norms stay
  float32, as under autocast.

Why each choice pays, measured, is on the performance page (docs/performance.md,
"Design choices measured").

``pack_decoder`` builds the packed weights from a decoder's layers;
``pack_for_inference`` (``rosetta.families.transformer.fast.packed``) is the
transform that callers apply to a whole model to decode with them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from rosetta.families.transformer.kv_cache import KeyValue, KeyValueCache
from rosetta.nn.attention import MultiHeadAttention, fused_attention
from rosetta.nn.feedforward import ACTIVATIONS


@dataclass(frozen=True)
class PackedLinear:
    """``y = x W^T + b`` with ``W^T`` stored contiguous, (d_in, d_out)."""

    weight_t: torch.Tensor
    bias: torch.Tensor | None

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """(n, d_in) -> (n, d_out). Weights packed in a lower precision than x
        are only used under autocast (``PackedTransformerDecoder.forward``
        checks), which casts x to them."""
        if self.bias is None:
            return torch.mm(x, self.weight_t)
        return torch.addmm(self.bias, x, self.weight_t)


def pack_linear(*linears: nn.Linear, dtype: torch.dtype | None = None) -> PackedLinear:
    """One product for several layers on the same input: outputs side by side;
    in ``dtype`` (default: the layers' own)."""
    dtype = dtype or linears[0].weight.dtype
    weight = torch.cat([linear.weight.detach() for linear in linears])
    biases = [linear.bias for linear in linears]
    bias = None
    if all(b is not None for b in biases):
        bias = torch.cat([b.detach() for b in biases])  # type: ignore[union-attr]
        bias = bias.to(dtype)
    elif any(b is not None for b in biases):
        raise ValueError("pack_linear needs all or none of the layers with a bias")
    return PackedLinear(weight.t().to(dtype).contiguous(), bias)


@dataclass(frozen=True)
class PackedVocabulary:
    """The output projection ``x W^T + b``, (n, d) -> (n, V), with W kept as
    stored, (V, d), and transposed, (d, V), both contiguous.

    Which layout the CPU's BLAS multiplies fastest changes with the row
    count (measured on the performance page): one row takes ``x W^T`` on W^T
    stored, 4 to 32 rows ``(W x^T)^T`` (``TRANSPOSED_ROWS``), other counts
    ``F.linear`` on W as stored. Other devices and dtypes (bf16) always take
    ``x W^T`` on W^T stored.
    """

    weight: torch.Tensor  # (V, d)
    transposed: PackedLinear  # W^T (d, V) and the bias

    TRANSPOSED_ROWS = range(4, 33)

    @property
    def dtype(self) -> torch.dtype:
        return self.weight.dtype

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        rows, bias = x.size(0), self.transposed.bias
        if rows == 1 or x.device.type != "cpu" or self.weight.dtype != torch.float32:
            return self.transposed(x)
        if rows not in self.TRANSPOSED_ROWS:
            return F.linear(x, self.weight, bias)
        logits = torch.mm(self.weight, x.t().contiguous()).t().contiguous()
        if bias is not None:
            logits += bias
        return logits


@torch.no_grad()
def pack_vocabulary(output_proj: nn.Linear, dtype: torch.dtype) -> PackedVocabulary:
    """The output projection in ``dtype``; in its own dtype, W as stored is the
    layer's weight itself, not a copy."""
    transposed = pack_linear(output_proj, dtype=dtype)
    return PackedVocabulary(output_proj.weight.detach().to(dtype), transposed)


def layer_norm(norm: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, norm.eps)


@dataclass(frozen=True)
class PackedLayer:
    """One decoder layer's weights for the one-token step."""

    self_qkv: PackedLinear  # d -> 3d: queries, keys, values of the new token
    self_out: PackedLinear
    cross_query: PackedLinear
    cross_out: PackedLinear
    ffn_in: PackedLinear
    ffn_out: PackedLinear
    self_norm: nn.LayerNorm
    cross_norm: nn.LayerNorm
    ffn_norm: nn.LayerNorm
    norm_first: bool
    heads: int
    activation: str  # the feed-forward's, a key of ``ACTIVATIONS``


@dataclass(frozen=True)
class PackedDecoder:
    """The packed layers and the dtype they compute in."""

    layers: list[PackedLayer]
    dtype: torch.dtype


def is_packable(layer: nn.Module) -> bool:
    """Fused attention (not the reference path) and plain float ``nn.Linear``
    layers (an int8-quantized copy has its own); absolute positions only."""
    if not isinstance(layer.self_attn, MultiHeadAttention):  # relative positions
        return False
    if not (layer.self_attn.fused and layer.cross_attn.fused):
        return False
    linears = [
        layer.self_attn.q_proj,
        layer.self_attn.k_proj,
        layer.self_attn.v_proj,
        layer.self_attn.out_proj,
        layer.cross_attn.q_proj,
        layer.cross_attn.out_proj,
        layer.ffn.linear1,
        layer.ffn.linear2,
    ]
    return all(type(linear) is nn.Linear for linear in linears)


def pack_layer(layer: nn.Module, dtype: torch.dtype) -> PackedLayer:
    """The weights of a ``TransformerDecoderLayer``, packed in ``dtype``."""
    self_attn, cross_attn = layer.self_attn, layer.cross_attn
    return PackedLayer(
        self_qkv=pack_linear(
            self_attn.q_proj, self_attn.k_proj, self_attn.v_proj, dtype=dtype
        ),
        self_out=pack_linear(self_attn.out_proj, dtype=dtype),
        cross_query=pack_linear(cross_attn.q_proj, dtype=dtype),
        cross_out=pack_linear(cross_attn.out_proj, dtype=dtype),
        ffn_in=pack_linear(layer.ffn.linear1, dtype=dtype),
        ffn_out=pack_linear(layer.ffn.linear2, dtype=dtype),
        self_norm=layer.self_res.norm,
        cross_norm=layer.cross_res.norm,
        ffn_norm=layer.ffn_res.norm,
        norm_first=layer.self_res.norm_first,
        heads=self_attn.heads,
        activation=layer.ffn.activation,
    )


def pack_decoder(layers: nn.ModuleList, dtype: torch.dtype) -> PackedDecoder:
    """Packed weights of ``layers`` (each ``is_packable``) computing in ``dtype``."""
    with torch.no_grad():
        return PackedDecoder([pack_layer(layer, dtype) for layer in layers], dtype)


def add_norm(norm: nn.LayerNorm, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Post-norm ``LN(x + y)``; ``y`` is overwritten if it can hold the sum (a
    lower-precision sublayer output is added in x's precision, as autocast)."""
    if y.dtype == x.dtype:
        y += x
    else:
        y = x + y
    return layer_norm(norm, y)


def self_attention(
    layer: PackedLayer, x: torch.Tensor, cache: KeyValueCache, index: int
) -> torch.Tensor:
    """The new token attends to every position so far, its own included: its
    keys and values are stored as the newest position of layer ``index``."""
    n, d = x.shape
    qkv = layer.self_qkv(x).view(n, 3, layer.heads, d // layer.heads)
    cache.store_step(index, qkv[:, 1:])
    q = qkv[:, 0].unsqueeze(2)  # (n, h, 1, d_k)
    heads = fused_attention(q, *cache[index])  # (n, h, 1, d_k)
    return layer.self_out(heads.view(n, d))


def cross_attention(
    layer: PackedLayer,
    x: torch.Tensor,
    memory_kv: KeyValue,
    src_mask: torch.Tensor,
    group: int,
) -> torch.Tensor:
    """Attention over the memory; each ``group`` rows share one memory row."""
    n, d = x.shape
    d_k = d // layer.heads
    # a sentence's beams are its queries: (n/g, h, g, d_k)
    q = layer.cross_query(x).view(n // group, group, layer.heads, d_k).transpose(1, 2)
    heads = fused_attention(q, *memory_kv, src_mask)
    return layer.cross_out(heads.transpose(1, 2).reshape(n, d))


def feed_forward(layer: PackedLayer, x: torch.Tensor) -> torch.Tensor:
    inner = layer.ffn_in(x)
    if layer.activation == "relu":  # in place: one tensor fewer per step
        return layer.ffn_out(inner.relu_())
    return layer.ffn_out(ACTIVATIONS[layer.activation](inner))


def layer_step(
    layer: PackedLayer,
    x: torch.Tensor,
    cache: KeyValueCache,
    index: int,
    memory_kv: KeyValue,
    src_mask: torch.Tensor,
    group: int,
) -> torch.Tensor:
    """Layer ``index`` for the new tokens x (n, d) -> (n, d). No dropout: this
    is inference."""
    if layer.norm_first:  # x + f(LN(x))
        x = x + self_attention(layer, layer_norm(layer.self_norm, x), cache, index)
        h = layer_norm(layer.cross_norm, x)
        x = x + cross_attention(layer, h, memory_kv, src_mask, group)
        return x + feed_forward(layer, layer_norm(layer.ffn_norm, x))
    x = add_norm(layer.self_norm, x, self_attention(layer, x, cache, index))
    x = add_norm(
        layer.cross_norm, x, cross_attention(layer, x, memory_kv, src_mask, group)
    )
    return add_norm(layer.ffn_norm, x, feed_forward(layer, x))


def decoder_step(
    packed: PackedDecoder,
    x: torch.Tensor,
    memory_kv: list[KeyValue],
    src_mask: torch.Tensor,
    self_kv: KeyValueCache | None,
    group: int,
) -> tuple[torch.Tensor, KeyValueCache]:
    """The embedded new tokens x (n, d) through every layer: (n, d) and the
    self-attention keys/values of every position so far."""
    if self_kv is None:
        heads, layers = packed.layers[0].heads, len(packed.layers)
        self_kv = KeyValueCache.empty(
            x.size(0), layers, heads, x.size(1) // heads, packed.dtype, x.device
        )
    cache = self_kv.extend(1)
    for i, layer in enumerate(packed.layers):
        x = layer_step(layer, x, cache, i, memory_kv[i], src_mask, group)
    return x, cache
