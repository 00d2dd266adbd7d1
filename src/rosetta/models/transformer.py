"""The Transformer encoder-decoder with key/value caching."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
from torch import nn

from rosetta.models.interface import Decoder, Encoder, EncoderDecoder
from rosetta.models.kv_cache import KeyValue, KeyValueCache
from rosetta.nn import (
    MultiHeadAttention,
    PositionwiseFeedForward,
    ResidualNorm,
    positional_encoding,
)
from rosetta.nn.dropout import Dropout
from rosetta.nn.linear_bias import LinearBiases, cross_distances, self_distances
from rosetta.nn.relative_attention import RelativeMultiHeadAttention


class TransformerEmbedding(nn.Module):
    """Token embedding scaled by sqrt(d), plus sinusoidal positions, then dropout.

    With ``absolute=False`` no positions are added: relative attention scores
    the distances between positions instead, and a decoder without positions
    learns where it is from its causal self-attention alone. ``token`` shares
    an existing token embedding (one vocabulary, two position schemes)."""

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        max_positions: int,
        dropout: float,
        absolute: bool = True,
        token: nn.Embedding | None = None,
    ):
        super().__init__()
        self.absolute = absolute
        if token is None:
            token = nn.Embedding(vocab_size, d_model)
            nn.init.normal_(token.weight, std=d_model**-0.5)
        self.token = token
        self.scale = math.sqrt(d_model)
        self.register_buffer(
            "positions", positional_encoding(max_positions, d_model), persistent=False
        )
        self.dropout = Dropout(dropout)

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
        x = self.token(tokens) * self.scale
        if self.absolute:
            if positions is None:
                x = x + self.positions[offset : offset + length]
            else:
                x = x + self.positions[positions]
        return self.dropout(x)


def _check_fits(length: int, span: int) -> None:
    if length > span:
        raise ValueError(f"sequence of {length} tokens exceeds max_positions ({span})")


def draw_positions(
    rows: int, length: int, span: int, device: torch.device
) -> torch.Tensor:
    """(rows, length): for every row, ``length`` distinct positions drawn
    uniformly from ``0 .. span-1`` and sorted (randomized positions)."""
    _check_fits(length, span)
    chosen = torch.rand(rows, span, device=device).topk(length, dim=1).indices
    return chosen.sort(dim=1).values


def draw_offsets(
    rows: int, length: int, span: int, device: torch.device
) -> torch.Tensor:
    """(rows, length): for every row, ``k, k+1, ..., k+length-1`` with ``k``
    drawn uniformly from ``0 .. span-length`` (shifted positions)."""
    _check_fits(length, span)
    start = torch.randint(0, span - length + 1, (rows, 1), device=device)
    return start + torch.arange(length, device=device)


def self_attention(
    d_model: int, heads: int, dropout: float, relative: bool
) -> MultiHeadAttention | RelativeMultiHeadAttention:
    """Self-attention over absolute positions (added to the embeddings) or
    scored by relative distance."""
    if relative:
        return RelativeMultiHeadAttention(d_model, heads, dropout)
    return MultiHeadAttention(d_model, heads, dropout)


class TransformerEncoderLayer(nn.Module):
    """Self-attention then FFN, each wrapped in residual + LayerNorm."""

    def __init__(
        self,
        d_model: int,
        heads: int,
        d_ff: int,
        dropout: float = 0.1,
        attention_dropout: float = 0.0,
        norm_first: bool = False,
        relative: bool = False,
    ):
        super().__init__()
        self.self_attn = self_attention(d_model, heads, attention_dropout, relative)
        self.ffn = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.attn_res = ResidualNorm(d_model, dropout, norm_first)
        self.ffn_res = ResidualNorm(d_model, dropout, norm_first)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """x (n, S, d), mask (n, 1, 1, S) -> (n, S, d)."""
        h = self.attn_res.before(x)
        x = self.attn_res.after(x, self.self_attn(h, h, h, mask)[0])
        return self.ffn_res.after(x, self.ffn(self.ffn_res.before(x)))


class TransformerDecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the memory, then FFN."""

    def __init__(
        self,
        d_model: int,
        heads: int,
        d_ff: int,
        dropout: float = 0.1,
        attention_dropout: float = 0.0,
        norm_first: bool = False,
        relative: bool = False,
    ):
        super().__init__()
        self.self_attn = self_attention(d_model, heads, attention_dropout, relative)
        self.cross_attn = MultiHeadAttention(d_model, heads, attention_dropout)
        self.ffn = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.self_res = ResidualNorm(d_model, dropout, norm_first)
        self.cross_res = ResidualNorm(d_model, dropout, norm_first)
        self.ffn_res = ResidualNorm(d_model, dropout, norm_first)

    def forward(
        self,
        x: torch.Tensor,
        memory_kv: KeyValue,
        src_mask: torch.Tensor,
        self_mask: torch.Tensor | None,
        cache: KeyValue | None = None,
        need_weights: bool = False,
        group: int = 1,
    ) -> tuple[torch.Tensor, KeyValue, torch.Tensor | None]:
        """x (n, t, d) new positions; ``cache`` holds keys/values of earlier ones.

        ``memory_kv`` and ``src_mask`` have n / ``group`` rows: each run of
        ``group`` consecutive rows of x (the beams of one sentence) shares one.
        Returns the output (n, t, d), the keys/values of all positions so far,
        and the cross-attention weights (n, heads, t, S) if ``need_weights``.
        """
        h = self.self_res.before(x)
        k, v = self.self_attn.project_key_value(h, h)
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        attn, _ = self.self_attn.attend(
            self.self_attn.project_query(h), k, v, self_mask
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


@dataclass
class TransformerState:
    """Decoding state: cross-attention keys/values of the memory (computed once),
    self-attention keys/values of the tokens decoded so far, and their count.

    The memory side is kept once per sentence: each run of ``group``
    consecutive decoding rows (a sentence's beams) shares one row of
    ``src_mask`` and ``memory_kv``, so reordering beams never copies it.
    """

    src_mask: torch.Tensor  # (m, 1, 1, S) bool, m = n / group
    memory_kv: list[KeyValue]  # per layer, (m, heads, S, d_k) each
    # None before the first token; the packed step (rosetta.models.packed)
    # keeps a KeyValueCache, the layers' path per-layer (n, heads, t, d_k)
    # pairs (either reads both)
    self_kv: KeyValueCache | list[KeyValue] | None
    length: int = 0
    attention: torch.Tensor | None = None  # (n, t, layers, heads, S) if asked
    group: int = 1  # decoding rows per memory row

    def reorder(self, index: torch.Tensor) -> TransformerState:
        """Row i of the result continues row ``index[i]``."""

        def pick(kv: KeyValue, rows: torch.Tensor) -> KeyValue:
            return kv[0].index_select(0, rows), kv[1].index_select(0, rows)

        sentences = torch.div(index, self.group, rounding_mode="floor")
        runs, counts = torch.unique_consecutive(sentences, return_counts=True)
        group = int(counts[0]) if counts.numel() else 1
        if not bool((counts == group).all()):  # uneven: one memory row per row
            runs, group = sentences, 1
        src_mask, memory_kv = self.src_mask, self.memory_kv
        unchanged = runs.numel() == src_mask.size(0) and bool(
            (runs == torch.arange(runs.numel(), device=runs.device)).all()
        )
        if not unchanged:
            src_mask = src_mask.index_select(0, runs)
            memory_kv = [pick(kv, runs) for kv in memory_kv]
        self_kv = self.self_kv
        if isinstance(self_kv, KeyValueCache):
            self_kv = self_kv.reorder(index)
        elif self_kv is not None:
            self_kv = [pick(kv, index) for kv in self_kv]
        return replace(
            self,
            src_mask=src_mask,
            memory_kv=memory_kv,
            self_kv=self_kv,
            attention=None
            if self.attention is None
            else self.attention.index_select(0, index),
            group=group,
        )


class TransformerEncoder(Encoder):
    """``biases``: distance penalties of the self-attention (``alibi``
    positions, ``rosetta.nn.linear_bias``), or None."""

    def __init__(
        self,
        embedding: TransformerEmbedding,
        layers: list[TransformerEncoderLayer],
        final_norm: nn.Module,
        biases: LinearBiases | None = None,
    ):
        super().__init__()
        self.embedding = embedding
        self.layers = nn.ModuleList(layers)
        self.final_norm = final_norm  # LayerNorm in pre-norm, Identity in post-norm
        self.biases = biases

    def forward(
        self,
        src: torch.Tensor,
        src_mask: torch.Tensor,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``positions`` (n, S): the tokens' positions, if not 0, 1, 2, ..."""
        x = self.embedding(src, positions=positions)  # (n, S, d)
        mask = src_mask[:, None, None, :]  # (n, 1, 1, S): every query sees real keys
        if self.biases is not None:
            length = src.size(1)
            distance = self_distances(length, length, src.device)
        for index, layer in enumerate(self.layers):
            if self.biases is not None:
                x = layer(x, self.biases.bias(index, distance, mask))
            else:
                x = layer(x, mask)
        return self.final_norm(x)


def causal_mask(new: int, total: int, device: torch.device) -> torch.Tensor:
    """(new, total) bool: new position ``p`` (of ``total-new..total-1``) sees 0..p."""
    rows = torch.arange(total - new, total, device=device).unsqueeze(1)
    return torch.arange(total, device=device).unsqueeze(0) <= rows


class TransformerDecoder(Decoder):
    """``self_biases`` / ``cross_biases``: distance penalties of the self- and
    cross-attention (``alibi`` positions, ``rosetta.nn.linear_bias``), or None."""

    def __init__(
        self,
        embedding: TransformerEmbedding,
        layers: list[TransformerDecoderLayer],
        final_norm: nn.Module,
        self_biases: LinearBiases | None = None,
        cross_biases: LinearBiases | None = None,
    ):
        super().__init__()
        self.embedding = embedding
        self.layers = nn.ModuleList(layers)
        self.final_norm = final_norm
        self.self_biases = self_biases
        self.cross_biases = cross_biases

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
        x = self.embedding(tgt_in, offset=state.length, positions=positions)
        self_masks, cross_masks = self.layer_masks(state, new, self_mask)
        caches, weights = [], []
        for i, layer in enumerate(self.layers):
            cache = None if state.self_kv is None else state.self_kv[i]
            x, kv, w = layer(
                x,
                state.memory_kv[i],
                cross_masks[i],
                self_masks[i],
                cache,
                need_attention,
                state.group,
            )
            caches.append(kv)
            weights.append(w)
        x = self.final_norm(x)  # (n, t, d)
        attention = None
        if need_attention:  # per layer (n, heads, t, S) -> (n, t, layers, heads, S)
            attention = torch.stack(weights, dim=1).permute(0, 3, 1, 2, 4)
        return x, replace(state, self_kv=caches, length=total, attention=attention)

    def layer_masks(
        self, state: TransformerState, new: int, self_mask: torch.Tensor | None
    ) -> tuple[list[torch.Tensor | None], list[torch.Tensor]]:
        """Every layer's self- and cross-attention masks for ``new`` positions
        after ``state.length``: the shared boolean ones, or with distance
        penalties, each layer's own bias."""
        layers = len(self.layers)
        if self.self_biases is None or self.cross_biases is None:
            return [self_mask] * layers, [state.src_mask] * layers
        total = state.length + new
        device = state.src_mask.device
        allowed = torch.ones((), dtype=torch.bool, device=device)
        if self_mask is not None:
            allowed = self_mask
        back = self_distances(new, total, device)
        heads = self.layers[0].cross_attn.num_heads
        across = cross_distances(state.length, new, state.src_mask[:, 0, 0], heads)
        if state.group > 1 and new > 1:  # queries of a sentence's beams, one run each
            across = across.repeat(1, 1, state.group, 1)
        return (
            [self.self_biases.bias(i, back, allowed) for i in range(layers)],
            [self.cross_biases.bias(i, across, state.src_mask) for i in range(layers)],
        )


class RandomPositionsTransformer(EncoderDecoder):
    """A Transformer that, in training, places every sentence pair at random
    positions of its table, ``0 .. max_positions-1``, so that every position
    is trained and a sentence longer than any seen in training finds none
    new. For a pair of ``S`` source and ``T`` target tokens, ``max(S, T)``
    positions are drawn; the source takes the first ``S`` and the target the
    first ``T``, so that source token ``i`` and target token ``i`` keep one
    position, as they do with ``0, 1, 2, ...``.

    ``draw``: ``randomized`` draws distinct positions anywhere in the table
    and sorts them (``draw_positions``); ``shifted`` draws one start and
    keeps the positions consecutive (``draw_offsets``). Outside training
    (validation, search) positions are ``0, 1, 2, ...``: decoding is that of
    the sinusoidal Transformer."""

    def __init__(
        self,
        encoder: Encoder,
        decoder: Decoder,
        output_proj: nn.Module,
        draw: str,
    ):
        super().__init__(encoder, decoder, output_proj)
        self.draw = draw_positions if draw == "randomized" else draw_offsets

    def forward(
        self,
        src: torch.Tensor,
        src_mask: torch.Tensor,
        tgt_in: torch.Tensor,
        tgt_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        if not self.training:
            return super().forward(src, src_mask, tgt_in, tgt_mask)
        span = self.encoder.embedding.positions.size(0)
        longest = max(src.size(1), tgt_in.size(1))
        positions = self.draw(src.size(0), longest, span, src.device)
        memory = self.encoder(src, src_mask, positions[:, : src.size(1)])
        state = self.init_state(memory, src_mask)
        features, _ = self.decoder(
            tgt_in, state, tgt_mask, positions=positions[:, : tgt_in.size(1)]
        )
        return features


POSITIONS = ("sinusoidal", "relative", "randomized", "shifted", "nope", "alibi")


def build_transformer(
    src_vocab: int,
    tgt_vocab: int,
    *,
    encoder_layers: int = 3,
    decoder_layers: int = 3,
    d_model: int = 256,
    heads: int = 4,
    d_ff: int = 1024,
    dropout: float = 0.1,
    attention_dropout: float = 0.0,
    norm_first: bool = False,
    share_embeddings: bool = False,
    tie_output: bool = True,
    max_positions: int = 1024,
    positions: str = "sinusoidal",
) -> EncoderDecoder:
    """Assemble a Transformer; the sizes are those of ``ModelConfig``.

    ``positions``: ``sinusoidal`` (added to both embeddings), ``relative``
    (self-attention scores distances), ``randomized`` / ``shifted``
    (sinusoids at random sorted / consecutive positions in training; see
    ``RandomPositionsTransformer``), ``nope`` (sinusoids in the encoder,
    none in the decoder) or ``alibi`` (no sinusoids; every attention
    penalises distance, ``rosetta.nn.linear_bias``)."""
    if share_embeddings and src_vocab != tgt_vocab:
        raise ValueError("shared embeddings need one vocabulary for source and target")
    if positions not in POSITIONS:
        raise ValueError(f"positions {positions!r}: use one of {', '.join(POSITIONS)}")
    relative = positions == "relative"
    alibi = positions == "alibi"

    def embedding(vocab: int) -> TransformerEmbedding:
        return TransformerEmbedding(
            vocab, d_model, max_positions, dropout, absolute=not (relative or alibi)
        )

    def biases(layers: int, both_ends: bool = False) -> LinearBiases | None:
        return LinearBiases(layers, heads, both_ends) if alibi else None

    def final_norm() -> nn.Module:
        return nn.LayerNorm(d_model) if norm_first else nn.Identity()

    layer_args = (
        d_model,
        heads,
        d_ff,
        dropout,
        attention_dropout,
        norm_first,
        relative,
    )
    src_embedding = embedding(src_vocab)
    tgt_embedding = src_embedding if share_embeddings else embedding(tgt_vocab)
    if positions == "nope":  # the same tokens, no positions added
        tgt_embedding = TransformerEmbedding(
            tgt_vocab, d_model, max_positions, dropout, False, tgt_embedding.token
        )
    output_proj = nn.Linear(d_model, tgt_vocab, bias=False)
    encoder = TransformerEncoder(
        src_embedding,
        [TransformerEncoderLayer(*layer_args) for _ in range(encoder_layers)],
        final_norm(),
        biases(encoder_layers),
    )
    decoder = TransformerDecoder(
        tgt_embedding,
        [TransformerDecoderLayer(*layer_args) for _ in range(decoder_layers)],
        final_norm(),
        biases(decoder_layers),
        biases(decoder_layers, both_ends=True),
    )
    for module in [*encoder.layers.modules(), *decoder.layers.modules()]:
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
    if tie_output:
        output_proj.weight = tgt_embedding.token.weight
    else:
        nn.init.normal_(output_proj.weight, std=d_model**-0.5)
    if positions in ("randomized", "shifted"):
        return RandomPositionsTransformer(encoder, decoder, output_proj, positions)
    return EncoderDecoder(encoder, decoder, output_proj)
