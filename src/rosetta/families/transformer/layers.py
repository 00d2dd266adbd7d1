"""The Transformer's pieces: the embedding, and the encoder and decoder layers."""

from __future__ import annotations

import math

import torch
from torch import nn

from rosetta.data.vocab import BOS_ID
from rosetta.families.transformer.kv_cache import KeyValue, KeyValueCache
from rosetta.nn import LayerSizes, positional_encoding
from rosetta.nn.dropout import Dropout
from rosetta.nn.positional import SinusoidLayout


class TransformerEmbedding(nn.Module):
    """Token embedding (scaled by sqrt(d) by default) plus positions, then
    dropout.

    With ``absolute=False`` no positions are added: relative attention scores
    the distances between positions instead, and a decoder without positions
    learns where it is from its causal self-attention alone. ``token`` shares
    an existing token embedding (one vocabulary, two position schemes);
    ``table`` (max_positions, d) replaces the sinusoids by learned vectors
    (digit places, ``number_table: learned``, or ``positions: learned``);
    ``layout``: the order of the sinusoids' sines and cosines and their
    frequencies, ``start`` the number of the first position
    (``rosetta.nn.positional``). ``scaled=False`` adds the token vectors as
    they are; ``norm`` normalises the sum (a LayerNorm before dropout, as
    mBART's embeddings); ``start_row``: the id whose row ``<bos>`` reads
    (fairseq's models start their decoder from ``</s>``; the encoder, which
    never sees ``<bos>``, may share the module)."""

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        max_positions: int,
        dropout: float,
        absolute: bool = True,
        token: nn.Embedding | None = None,
        table: nn.Parameter | None = None,
        layout: SinusoidLayout = "interleaved",
        *,
        start: int = 0,
        scaled: bool = True,
        norm: bool = False,
        start_row: int | None = None,
    ):
        super().__init__()
        self.absolute = absolute
        if token is None:
            token = nn.Embedding(vocab_size, d_model)
            nn.init.normal_(token.weight, std=d_model**-0.5)
        self.token = token
        self.scale = math.sqrt(d_model) if scaled else 1.0
        if table is None:
            table = positional_encoding(max_positions, d_model, layout, start)
            self.register_buffer("positions", table, persistent=False)
        else:
            self.positions = table
        self.norm = nn.LayerNorm(d_model) if norm else None
        self.dropout = Dropout(dropout)
        self.start_row = start_row

    def forward(
        self,
        tokens: torch.Tensor,
        offset: int = 0,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """(n, L) ids -> (n, L, d); ``offset`` is the position of the first
        token, or ``positions`` (n, L) gives every token's own."""
        length = tokens.size(1)
        if offset + length > self.positions.size(0):
            raise ValueError(
                f"sequence of {offset + length} tokens exceeds max_positions "
                f"({self.positions.size(0)})"
            )
        if not self.absolute:
            return self._embedded(tokens, None)
        if positions is None:
            return self._embedded(tokens, self.positions[offset : offset + length])
        self._check_table_holds(positions)
        return self._embedded(tokens, self.positions[positions])

    def at(self, tokens: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        """(n,) ids all at ``position``, a 0-d tensor the caller checked
        against ``max_positions`` -> (n, 1, d): no host read, as a compiled
        step needs."""
        added = None
        if self.absolute:  # a tensor index, not an integer: no host read
            added = self.positions.index_select(0, position.view(1))
        return self._embedded(tokens.unsqueeze(1), added)

    def _embedded(
        self, tokens: torch.Tensor, added: torch.Tensor | None
    ) -> torch.Tensor:
        """The token vectors plus ``added`` positions, normalised, dropped."""
        if self.start_row is not None:
            tokens = tokens.masked_fill(tokens == BOS_ID, self.start_row)
        x = self.token(tokens) * self.scale
        if added is not None:
            x = x + added
        if self.norm is not None:
            x = self.norm(x)
        return self.dropout(x)

    def _check_table_holds(self, positions: torch.Tensor) -> None:
        """A position past the table (a number longer than it holds) is a
        clear error, not an index error."""
        span = self.positions.size(0)
        if positions.numel() and int(positions.max()) >= span:
            raise ValueError(
                f"position {int(positions.max())} exceeds max_positions ({span}): "
                "raise model.max_positions (with abacus or coupled positions, "
                "above number_offset plus the longest number)"
            )


class TransformerEncoderLayer(nn.Module):
    """Self-attention then FFN, each wrapped in residual + LayerNorm
    (``relative``: self-attention scored by relative distance)."""

    def __init__(self, sizes: LayerSizes, relative: bool = False):
        super().__init__()
        self.self_attn = sizes.self_attention(relative)
        self.relative = relative
        self.ffn = sizes.feed_forward()
        self.attn_res, self.ffn_res = sizes.residual(), sizes.residual()

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """x (n, S, d), mask (n, 1, 1, S) -> (n, S, d); relative attention
        scores the distances of ``positions`` (n, S) where given."""
        h = self.attn_res.before(x)
        q = self.self_attn.project_query(h)
        k, v = self.self_attn.project_key_value(h, h)
        attn, _ = self.self_attn.attend(q, k, v, mask, **placed(self, positions))
        x = self.attn_res.after(x, attn)
        return self.ffn_res.after(x, self.ffn(self.ffn_res.before(x)))


class TransformerDecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the memory, then FFN
    (``relative``: self-attention scored by relative distance)."""

    def __init__(self, sizes: LayerSizes, relative: bool = False):
        super().__init__()
        self.self_attn = sizes.self_attention(relative)
        self.relative = relative
        self.cross_attn = sizes.attention()
        self.ffn = sizes.feed_forward()
        self.self_res, self.cross_res = sizes.residual(), sizes.residual()
        self.ffn_res = sizes.residual()

    def forward(
        self,
        x: torch.Tensor,
        memory_kv: KeyValue,
        src_mask: torch.Tensor,
        self_mask: torch.Tensor | None,
        cache: KeyValueCache | None = None,
        index: int = 0,
        need_weights: bool = False,
        group: int = 1,
        positions: torch.Tensor | None = None,
        distance: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, KeyValue, torch.Tensor | None]:
        """x (n, t, d) new positions; ``cache`` holds keys/values of earlier
        ones, this layer's at ``index``, with room for the new ones;
        relative attention scores the distances of ``positions`` (n, t) where
        given (teacher forcing at drawn positions), or ``distance`` (K,), the
        one new position's distance to every key (a ``SlotCache``'s slots).

        ``memory_kv`` and ``src_mask`` have n / ``group`` rows: each run of
        ``group`` consecutive rows of x (the beams of one sentence) shares one.
        Returns the output (n, t, d), the keys/values of all positions so far,
        and the cross-attention weights (n, heads, t, S) if ``need_weights``.
        """
        h = self.self_res.before(x)
        k, v = self.self_attn.project_key_value(h, h)
        if cache is not None:  # the new positions beside the earlier ones
            # read back contiguous, as attention has always read them here:
            # strided views sum in another order (scores differ in the last bits)
            k, v = (t.contiguous() for t in cache.store(index, k, v))
        attn, _ = self.self_attn.attend(
            self.self_attn.project_query(h),
            k,
            v,
            self_mask,
            **placed(self, positions, distance),
        )
        x = self.self_res.after(x, attn)

        h = self.cross_res.before(x)
        q = self.cross_attn.project_query(h)  # (n, heads, t, d_k)
        n, heads, t, d_k = q.shape
        if group > 1:  # a sentence's beams are its queries: (n/g, heads, g*t, d_k)
            q = q.view(n // group, group, heads, t, d_k).transpose(1, 2)
            q = q.reshape(n // group, heads, group * t, d_k)
        cross, weights = self.cross_attn.attend(q, *memory_kv, src_mask, need_weights)
        if group > 1:  # back to one row per beam
            cross = cross.reshape(n, t, -1)
            if weights is not None:
                weights = weights.view(n // group, heads, group, t, -1).transpose(1, 2)
                weights = weights.reshape(n, heads, t, -1)
        x = self.cross_res.after(x, cross)
        x = self.ffn_res.after(x, self.ffn(self.ffn_res.before(x)))
        return x, (k, v), weights


def placed(
    layer: TransformerEncoderLayer | TransformerDecoderLayer,
    positions: torch.Tensor | None,
    distance: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """The keyword that gives a relative self-attention its keys' positions
    or their ``distance`` from the query; none where there are none, or the
    attention adds positions to the embeddings instead (they are then in the
    layer's input already)."""
    if not layer.relative:
        return {}
    if distance is not None:
        return {"distance": distance}
    return {} if positions is None else {"positions": positions}
