"""The toy language model: each GRU layer starts a segment from the hidden
state it ended the previous one with, which is its memory (one position)."""

from __future__ import annotations

import torch
from torch import nn

from rosetta.interfaces.language_model import Memory
from tests.toy_lm_family.config import ToyLMConfig


class ToyLM(nn.Module):
    def __init__(self, vocab: int, layers: int, d_model: int):
        super().__init__()
        self.d_model = d_model
        self.token = nn.Embedding(vocab, d_model)
        self.layers = nn.ModuleList(
            nn.GRU(d_model, d_model, batch_first=True) for _ in range(layers)
        )
        self.output_proj = nn.Linear(d_model, vocab)

    def forward(
        self,
        tokens: torch.Tensor,
        memory: Memory | None = None,
        memory_length: int | None = None,
    ) -> tuple[torch.Tensor, Memory]:
        keep = 1 if memory_length is None else min(memory_length, 1)
        x, new_memory = self.token(tokens), []
        for i, layer in enumerate(self.layers):
            past = None if memory is None or not memory[i].size(1) else memory[i]
            x, _ = layer(x, None if past is None else past[:, -1:].transpose(0, 1))
            new_memory.append(x[:, x.size(1) - keep :].detach())
        return x, new_memory


def build(
    config: ToyLMConfig, src_vocab: int, tgt_vocab: int, tokenizers: object = None
) -> ToyLM:
    return ToyLM(tgt_vocab, config.layers, config.d_model)
