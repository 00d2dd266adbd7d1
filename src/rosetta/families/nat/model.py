"""Non-autoregressive translation with fertilities: every target token at once.

An autoregressive decoder needs one step per target token, each waiting for
the one before. The non-autoregressive Transformer (NAT) decides the length
first and then predicts all target tokens in one pass:

1. **Encoder.** The Transformer encoder: states ``h_1 … h_S`` of the source.
2. **Fertilities.** For every source token, a softmax over ``0 … F`` gives
   its fertility ``f_i``: how many target tokens it accounts for.
   The target has ``T = Σ f_i`` tokens.
3. **Decoder input.** Source token ``i``'s embedding, copied ``f_i`` times,
   in source order (``copy_by_fertility``). Source ``a b c`` with
   fertilities ``2 0 1`` gives ``a a c``. Without fertilities, *uniform
   copy* gives target position ``t`` the embedding of source position
   ``⌊t·S/T⌋`` (``uniform_copy``). Sinusoids of the target positions are
   added.
4. **Decoder.** Each layer has self-attention without the causal mask
   (every target position sees every other), *positional attention*
   (queries and keys are the positions' sinusoids, values the layer's
   states, so that a position can gather from its neighbours by where
   they are rather than by what they hold), cross-attention to the
   encoder, and a feed-forward layer. The output projection then gives
   every target token's distribution at once.

Nothing is conditioned on earlier outputs, so the target tokens are
predicted independently given the source and the fertilities: the
fertilities carry the choice among translations that an autoregressive
decoder makes word by word.

With ``length_model: ctc`` there are no fertilities: the decoder input is
every source token copied ``upsample`` times, and the target is read off
its positions by CTC (``rosetta.families.nat.ctc``). In glancing training
(``rosetta.families.nat.glancing``) some decoder inputs are replaced by
the embeddings of the reference tokens they stand for (``Glance``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from rosetta.families.nat.config import NATConfig
from rosetta.families.transformer.layers import (
    TransformerEmbedding,
    TransformerEncoderLayer,
)
from rosetta.families.transformer.model import TransformerEncoder
from rosetta.nn import LayerSizes
from rosetta.nn.dropout import Dropout
from rosetta.nn.init import xavier_linear_layers


def copy_by_fertility(
    embedded: torch.Tensor, fertilities: torch.Tensor, max_fertility: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Every source vector repeated as often as its fertility, in order.

    Args:
        embedded: (n, S, d) source vectors.
        fertilities: (n, S) non-negative ints, 0 at padding; each is capped
            at ``max_fertility``.
    Returns:
        The decoder input (n, T, d), ``T`` the longest row's total (at
        least 1), zeros past a row's own total, and the target mask (n, T),
        True at real positions.
    """
    if bool((fertilities < 0).any()):
        raise ValueError("fertilities must be non-negative")
    fertilities = fertilities.clamp(max=max_fertility)
    ends = fertilities.cumsum(1)  # (n, S): one past each token's last copy
    lengths = ends[:, -1]
    longest = max(int(lengths.max()), 1)
    targets = torch.arange(longest, device=embedded.device)
    # target position t copies the first source token whose copies end after t
    source = torch.searchsorted(
        ends, targets.expand(len(ends), -1).contiguous(), right=True
    )
    source = source.clamp(max=embedded.size(1) - 1)
    mask = targets[None, :] < lengths[:, None]
    copied = embedded.gather(1, source[..., None].expand(-1, -1, embedded.size(2)))
    return copied * mask[..., None], mask


def uniform_copy(
    embedded: torch.Tensor, src_mask: torch.Tensor, tgt_lengths: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Target position ``t`` of a row of ``T`` takes source position
    ``⌊t·S/T⌋`` of its ``S`` real ones: (n, T, d) and the target mask (n, T)."""
    longest = max(int(tgt_lengths.max()), 1)
    targets = torch.arange(longest, device=embedded.device)[None, :]
    src_lengths = src_mask.sum(1, keepdim=True)
    source = targets * src_lengths // tgt_lengths[:, None].clamp(min=1)
    source = source.clamp(max=embedded.size(1) - 1)
    mask = targets < tgt_lengths[:, None]
    copied = embedded.gather(1, source[..., None].expand(-1, -1, embedded.size(2)))
    return copied * mask[..., None], mask


class Glance(NamedTuple):
    """Decoder inputs to replace in glancing training: where (n, T) and by
    which reference tokens (n, T)."""

    revealed: torch.Tensor
    tokens: torch.Tensor


class NATDecoderLayer(nn.Module):
    """Self-attention (no causal mask), positional attention (unless
    ``positional`` is False), cross-attention over the encoder states, then
    the feed-forward layer; each sub-layer in a residual connection with
    LayerNorm."""

    def __init__(self, sizes: LayerSizes, positional: bool = True):
        super().__init__()
        self.self_attn = sizes.attention()
        self.positional_attn = sizes.attention() if positional else None
        self.cross_attn = sizes.attention()
        self.ffn = sizes.feed_forward()
        self.self_res = sizes.residual()
        self.positional_res = sizes.residual() if positional else None
        self.cross_res, self.ffn_res = sizes.residual(), sizes.residual()

    def forward(
        self,
        x: torch.Tensor,
        positions: torch.Tensor,
        memory: torch.Tensor,
        tgt_mask: torch.Tensor,
        src_mask: torch.Tensor,
        need_weights: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x (n, T, d); positions (T, d) sinusoids; memory (n, S, d); masks
        (n, 1, 1, T) and (n, 1, 1, S). Returns (n, T, d) and, with
        ``need_weights``, the cross-attention weights (n, heads, T, S)."""
        h = self.self_res.before(x)
        x = self.self_res.after(x, self.self_attn(h, h, h, tgt_mask)[0])
        if self.positional_attn is not None and self.positional_res is not None:
            h = self.positional_res.before(x)
            where = positions.expand(x.size(0), -1, -1)
            x = self.positional_res.after(
                x, self.positional_attn(where, where, h, tgt_mask)[0]
            )
        h = self.cross_res.before(x)
        cross, weights = self.cross_attn(h, memory, memory, src_mask, need_weights)
        x = self.cross_res.after(x, cross)
        return self.ffn_res.after(x, self.ffn(self.ffn_res.before(x))), weights


class NonAutoregressiveTransformer(nn.Module):
    """The encoder, the fertility predictor, the decoder and the output
    projection (the module docstring has the whole model).

    ``forward(src, src_mask, fertilities)`` gives the decoder features of
    the target those fertilities make, (n, T, d), its mask (n, T), and the
    fertility logits (n, S, F+1); ``output_proj`` maps features to logits.
    In training the fertilities are the reference ones (from alignments);
    in search, predicted or sampled ones (``rosetta.families.nat.search``).
    """

    def __init__(
        self,
        encoder: TransformerEncoder,
        layers: list[NATDecoderLayer],
        final_norm: nn.Module,
        output_proj: nn.Linear,
        max_fertility: int,
        dropout: float,
        copy: str = "fertility",
        upsample: int | None = None,
    ):
        super().__init__()
        self.encoder = encoder
        self.layers = nn.ModuleList(layers)
        self.final_norm = final_norm
        self.output_proj = output_proj
        self.max_fertility = max_fertility
        self.copy = copy
        self.upsample = upsample  # a CTC model's decoder positions per source token
        d_model = output_proj.in_features
        self.fertility = (
            nn.Linear(d_model, max_fertility + 1) if upsample is None else None
        )
        self.dropout = Dropout(dropout)

    @property
    def uses_ctc(self) -> bool:
        return self.upsample is not None

    def encode(
        self, src: torch.Tensor, src_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Encoder states (n, S, d) and fertility logits (n, S, F+1), None for
        a CTC model; the logits of padding are -inf but at 0, so padding has
        fertility 0."""
        memory = self.encoder(src, src_mask)
        if self.fertility is None:
            return memory, None
        logits = self.fertility(memory).float()
        zero_only = torch.full_like(logits, float("-inf"))
        zero_only[..., 0] = 0.0
        return memory, torch.where(src_mask[..., None], logits, zero_only)

    def decode(
        self,
        src: torch.Tensor,
        src_mask: torch.Tensor,
        memory: torch.Tensor,
        fertilities: torch.Tensor | None,
        need_attention: bool = False,
        glance: Glance | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Decoder features (n, T, d) for the target of ``fertilities`` (n, S)
        (a CTC model takes None: ``upsample`` copies of every source token),
        its mask (n, T) and, with ``need_attention``, the cross-attention
        weights (n, T, layers, heads, S). ``glance`` replaces some decoder
        inputs by reference tokens' embeddings."""
        embedding = self.encoder.embedding
        tokens = embedding.token(src) * embedding.scale  # no source positions
        x, tgt_mask = self.copy_source(tokens, src_mask, fertilities)
        if glance is not None:
            # the output projection's rows: the target embedding when tied
            targets = self.output_proj.weight[glance.tokens] * embedding.scale
            x = torch.where(glance.revealed[..., None], targets.to(x.dtype), x)
        length = x.size(1)
        table = embedding.positions
        if length > table.size(0):
            raise ValueError(
                f"target of {length} tokens exceeds max_positions ({table.size(0)})"
            )
        positions = table[:length].to(x.dtype)
        x = self.dropout(x + positions)
        self_mask = tgt_mask[:, None, None, :]
        cross_mask = src_mask[:, None, None, :]
        weights = []
        for layer in self.layers:
            x, w = layer(x, positions, memory, self_mask, cross_mask, need_attention)
            weights.append(w)
        attention = None
        if need_attention:  # per layer (n, heads, T, S) -> (n, T, layers, heads, S)
            attention = torch.stack(weights, dim=1).permute(0, 3, 1, 2, 4)
        return self.final_norm(x), tgt_mask, attention

    def copy_source(
        self,
        tokens: torch.Tensor,
        src_mask: torch.Tensor,
        fertilities: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The decoder input (n, T, d) from the source embeddings (n, S, d)
        and its mask (n, T) (module docstring, step 3)."""
        if self.upsample is not None:
            copies = src_mask.long() * self.upsample
            return copy_by_fertility(tokens, copies, self.upsample)
        if fertilities is None:
            raise ValueError("a fertility model decodes from fertilities")
        fertilities = fertilities.masked_fill(~src_mask, 0)
        if self.copy == "uniform":
            lengths = fertilities.clamp(max=self.max_fertility).sum(1)
            return uniform_copy(tokens, src_mask, lengths)
        return copy_by_fertility(tokens, fertilities, self.max_fertility)

    def forward(
        self,
        src: torch.Tensor,
        src_mask: torch.Tensor,
        fertilities: torch.Tensor | None,
        glance: Glance | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        memory, fertility_logits = self.encode(src, src_mask)
        features, tgt_mask, _ = self.decode(
            src, src_mask, memory, fertilities, glance=glance
        )
        return features, tgt_mask, fertility_logits


def build_nat(
    config: NATConfig, src_vocab: int, tgt_vocab: int, tokenizers: object = None
) -> NonAutoregressiveTransformer:
    """Assemble a NAT of ``config``'s sizes (``tokenizers`` change nothing).
    With ``share_embeddings`` and
    ``tie_output`` (one vocabulary), the output projection is the source
    embedding, which is also the decoder input."""
    d_model, dropout = config.d_model, config.dropout
    sizes = LayerSizes(
        d_model,
        config.heads,
        config.d_ff,
        dropout,
        config.attention_dropout,
        norm_first=config.norm == "pre",
    )
    share_embeddings = config.share_embeddings
    if share_embeddings and src_vocab != tgt_vocab:
        raise ValueError("shared embeddings need one vocabulary for source and target")
    embedding = TransformerEmbedding(src_vocab, d_model, config.max_positions, dropout)
    final_norm = sizes.final_norm()
    encoder = TransformerEncoder(
        embedding,
        [TransformerEncoderLayer(sizes) for _ in range(config.encoder_layers)],
        sizes.final_norm(),
    )
    layers = [
        NATDecoderLayer(sizes, config.positional_attention)
        for _ in range(config.decoder_layers)
    ]
    output_proj = nn.Linear(d_model, tgt_vocab, bias=False)
    model = NonAutoregressiveTransformer(
        encoder,
        layers,
        final_norm,
        output_proj,
        config.max_fertility,
        dropout,
        config.decoder_input,
        config.upsample if config.length_model == "ctc" else None,
    )
    xavier_linear_layers(encoder.layers, model.layers)
    if share_embeddings and config.tie_output:
        output_proj.weight = embedding.token.weight
    else:
        nn.init.normal_(output_proj.weight, std=d_model**-0.5)
    if model.fertility is not None:
        nn.init.normal_(model.fertility.weight, std=1 / math.sqrt(d_model))
        nn.init.zeros_(model.fertility.bias)
    return model
