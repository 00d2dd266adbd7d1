"""Scaled dot-product and multi-head attention.

Mask polarity, for the whole code base: a boolean mask is **True where a query
may attend** to a key (the polarity of ``torch.nn.functional.
scaled_dot_product_attention``), and it broadcasts to
(batch, heads, query_len, key_len). A float mask is added to the scores
(a bias; ``-inf`` where a query may not attend).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import nullcontext

import torch
import torch.nn.functional as F
from torch import nn

try:
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError:  # torch < 2.3 has no cuDNN attention to keep out
    _CHOOSES_KERNELS = False
else:
    _CHOOSES_KERNELS = True


def scaled_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Reference attention written from the formula ``softmax(Q K^T / sqrt(d_k)) V``.

    Masked positions get -inf before the softmax, so their weight is 0.

    Args:
        query: (..., Lq, d_k); key: (..., Lk, d_k); value: (..., Lk, d_v).
        mask: broadcastable to (..., Lq, Lk): bool, True = may attend, or
            float, added to the scores.
        dropout_p: dropout on the attention weights (pass 0 at inference).
    Returns:
        (output (..., Lq, d_v), weights (..., Lq, Lk)).
    """
    d_k = query.size(-1)
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)  # (..., Lq, Lk)
    if mask is not None and mask.dtype == torch.bool:
        scores = scores.masked_fill(~mask, float("-inf"))
    elif mask is not None:
        scores = scores + mask
    weights = torch.softmax(scores, dim=-1)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ value, weights


def fused_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
) -> torch.Tensor:
    """``torch.nn.functional.scaled_dot_product_attention`` (the output only),
    on a GPU with the flash and memory-efficient kernels (or the plain one)
    but not cuDNN's: cuDNN builds a plan for every new shape, milliseconds of
    host time, and batches cut by a token budget bring a new shape nearly
    every step (on an H200 that made bf16 training 15× slower than fp32)."""
    if not _CHOOSES_KERNELS or query.device.type != "cuda":
        return F.scaled_dot_product_attention(
            query, key, value, attn_mask=mask, dropout_p=dropout_p
        )
    kernels = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
    with sdpa_kernel([*kernels, SDPBackend.MATH]):
        return F.scaled_dot_product_attention(
            query, key, value, attn_mask=mask, dropout_p=dropout_p
        )


class HeadAttention(nn.Module):
    """What multi-head attentions share: queries, keys and values projected
    (``q_proj``, ``k_proj``, ``v_proj``) and split into heads of ``d_k``; how
    the heads attend (``attend``) is each one's own."""

    def __init__(self, d_model: int, heads: int, dropout: float, bias: bool):
        super().__init__()
        if d_model % heads:
            raise ValueError(f"heads ({heads}) must divide d_model ({d_model})")
        self.d_model, self.heads, self.d_k = d_model, heads, d_model // heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)

    # each one's own: projected queries (n, h, Lq, d_k) over projected keys
    # and values (n, h, Lk, d_k), mask, need_weights -> (output, weights)
    attend: Callable[..., tuple[torch.Tensor, torch.Tensor | None]]

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(n, L, h*d_k) -> (n, h, L, d_k)."""
        n, length, width = x.shape
        return x.view(n, length, width // self.d_k, self.d_k).transpose(1, 2)

    def project_query(self, query: torch.Tensor) -> torch.Tensor:
        return self.split_heads(self.q_proj(query))

    def project_key_value(
        self, key: torch.Tensor, value: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-head keys and values, (n, h, Lk, d_k) each; what a cache stores."""
        return self.split_heads(self.k_proj(key)), self.split_heads(self.v_proj(value))

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
        need_weights: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Returns ``(output, weights)``; weights are None unless ``need_weights``."""
        k, v = self.project_key_value(key, value)
        return self.attend(self.project_query(query), k, v, mask, need_weights)


class MultiHeadAttention(HeadAttention):
    """``MultiHead(Q, K, V) = Concat(head_1..head_h) W^O``.

    ``head_i = SDPA(Q W_i^Q, K W_i^K, V W_i^V)``.

    The h per-head projections ``W_i^Q`` (d x d_k) are stored side by side in
    one ``q_proj`` (d x h*d_k), likewise ``k_proj``, ``v_proj``; ``out_proj``
    is ``W^O``. The fast path calls ``torch.nn.functional.
    scaled_dot_product_attention``; the reference path (``fused=False``, or
    whenever the weights are asked for) is :func:`scaled_dot_product_attention`.

    Shape:
        query (n, Lq, d), key/value (n, Lk, d) -> output (n, Lq, d),
        weights (n, h, Lq, Lk).
    """

    def __init__(
        self, d_model: int, heads: int, dropout: float = 0.0, fused: bool = True
    ):
        super().__init__(d_model, heads, dropout, bias=True)
        self.fused = fused
        self.out_proj = nn.Linear(d_model, d_model)

    def attend(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None = None,
        need_weights: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attention over already projected heads, then concat and ``W^O``."""
        dropout_p = self.dropout if self.training else 0.0
        # Under bf16 autocast on a CPU, attention itself runs in float32: the
        # CPU attention kernels are 2-3x slower in bfloat16 (forward+backward).
        in_float32 = q.device.type == "cpu" and q.dtype == torch.bfloat16
        outside_autocast = (
            torch.autocast("cpu", enabled=False) if in_float32 else nullcontext()
        )
        with outside_autocast:
            if in_float32:
                q, k, v = q.float(), k.float(), v.float()
            if mask is not None and mask.is_floating_point():  # a bias
                mask = mask.to(q.dtype)
            if self.fused and not need_weights:
                heads = fused_attention(q, k, v, mask, dropout_p)
                weights = None
            else:
                heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
        n, _, length, _ = heads.shape
        concat = heads.transpose(1, 2).reshape(n, length, self.heads * self.d_k)
        return self.out_proj(concat), weights
