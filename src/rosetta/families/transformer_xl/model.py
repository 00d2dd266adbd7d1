"""A decoder-only Transformer language model with segment-level recurrence
(Transformer-XL).

A long text is read in consecutive segments of ``L`` tokens. A plain
Transformer language model sees each segment alone, so the first tokens of a
segment are predicted from almost no context: the text is *fragmented*. Here
every layer keeps the hidden states that entered it for the last ``M``
positions (its *memory*) and the next segment's self-attention attends over
``[memory; segment]``:

    h_new^{l}   = the layer-l inputs of the segment            (n, L, d)
    keys^{l}    = [stop_gradient(memory^{l}); h_new^{l}]          (n, M + L, d)
    memory^{l}' = the last M rows of keys^{l}

No gradient flows into the memory, so training costs one segment at a time,
while the context reaches ``M`` positions back in every layer, about
``layers × M`` in all. The attention is relative
(``rosetta.nn.RelativeMultiHeadAttention``): a position's distance to a
remembered key is the same whichever segment it came from, which absolute
positions could not express.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from rosetta.interfaces.language_model import Memory
from rosetta.nn import LayerSizes
from rosetta.nn.dropout import Dropout
from rosetta.nn.init import xavier_linear_layers


class MemoryLayer(nn.Module):
    """Relative self-attention over ``[memory; x]`` under the causal mask, then
    the feed-forward network, each inside a residual connection."""

    def __init__(self, sizes: LayerSizes):
        super().__init__()
        self.self_attn = sizes.self_attention(relative=True)
        self.ffn = sizes.feed_forward()
        self.attn_res, self.ffn_res = sizes.residual(), sizes.residual()

    def forward(
        self, x: torch.Tensor, memory: torch.Tensor | None, mask: torch.Tensor
    ) -> torch.Tensor:
        """x (n, L, d), memory (n, M, d) or None, mask (L, M + L) -> (n, L, d)."""
        h = self.attn_res.before(x)
        # memory holds earlier inputs x; a pre-norm layer normalises them as
        # it does its own (per position: the same as one pass over both)
        keys = h if memory is None else self.attn_res.before(torch.cat([memory, x], 1))
        x = self.attn_res.after(x, self.self_attn(h, keys, keys, mask)[0])
        return self.ffn_res.after(x, self.ffn(self.ffn_res.before(x)))


def causal_memory_mask(
    length: int, remembered: int, device: torch.device
) -> torch.Tensor:
    """(L, M + L) bool: segment position i (at M + i) sees keys 0 .. M + i."""
    keys = torch.arange(remembered + length, device=device)
    queries = remembered + torch.arange(length, device=device)
    return keys[None, :] <= queries[:, None]


class MemoryTransformerLM(nn.Module):
    """Embedding, ``layers`` memory layers, a final norm (pre-norm) and the
    output projection, tied to the embedding.

    ``forward(tokens, memory)`` returns the features of every position and
    the memory for the next segment; ``memory_length`` 0 is a plain
    Transformer language model over each segment alone.
    """

    def __init__(
        self,
        vocab_size: int,
        *,
        layers: int = 6,
        d_model: int = 384,
        heads: int = 6,
        d_ff: int = 1536,
        dropout: float = 0.1,
        attention_dropout: float = 0.0,
        norm_first: bool = True,
        memory_length: int = 256,
    ):
        super().__init__()
        self.d_model, self.memory_length = d_model, memory_length
        self.token = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.token.weight, std=d_model**-0.5)
        self.scale = math.sqrt(d_model)
        self.dropout = Dropout(dropout)
        sizes = LayerSizes(d_model, heads, d_ff, dropout, attention_dropout, norm_first)
        self.layers = nn.ModuleList(MemoryLayer(sizes) for _ in range(layers))
        self.final_norm = sizes.final_norm()
        self.output_proj = nn.Linear(d_model, vocab_size, bias=False)
        self.output_proj.weight = self.token.weight
        xavier_linear_layers(self.layers)

    def forward(
        self,
        tokens: torch.Tensor,
        memory: Memory | None = None,
        memory_length: int | None = None,
    ) -> tuple[torch.Tensor, Memory]:
        """(n, L) ids and the previous segment's memory -> features (n, L, d)
        and the memory to pass to the next segment (detached, at most
        ``memory_length`` positions; the model's own by default)."""
        keep = self.memory_length if memory_length is None else memory_length
        remembered = 0 if memory is None else memory[0].size(1)
        mask = causal_memory_mask(tokens.size(1), remembered, tokens.device)
        x = self.dropout(self.token(tokens) * self.scale)
        new_memory = []
        for i, layer in enumerate(self.layers):
            past = None if memory is None else memory[i]
            seen = x if past is None else torch.cat([past, x], dim=1)
            new_memory.append(seen[:, max(0, seen.size(1) - keep) :].detach())
            x = layer(x, past, mask)
        return self.final_norm(x), new_memory
