"""The toy model: the source embedded word by word is the memory; each
target position reads its input token and attends over the memory once."""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch import nn

from rosetta.data.tokenizer import TokenizerPair
from rosetta.interfaces.encoder_decoder import Decoder, Encoder, EncoderDecoder
from tests.toy_family.config import ToyConfig


@dataclass(frozen=True)
class ToyState:
    memory: torch.Tensor  # (n, S, d)
    src_mask: torch.Tensor  # (n, S), True at real tokens
    attention: torch.Tensor | None = None

    def reorder(self, index: torch.Tensor) -> ToyState:
        return replace(self, memory=self.memory[index], src_mask=self.src_mask[index])


class ToyEncoder(Encoder):
    def __init__(self, vocab: int, d: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d)

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        return self.embedding(src)


class ToyDecoder(Decoder):
    def __init__(self, vocab: int, d: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d)
        self.mix = nn.Linear(2 * d, d)

    def init_state(self, memory: torch.Tensor, src_mask: torch.Tensor) -> ToyState:
        return ToyState(memory, src_mask)

    def forward(self, tgt_in, state, tgt_mask=None, need_attention=False):
        query = self.embedding(tgt_in)  # (n, T, d)
        scores = query @ state.memory.transpose(1, 2)  # (n, T, S)
        scores = scores.masked_fill(~state.src_mask[:, None, :], float("-inf"))
        weights = scores.softmax(-1)
        context = weights @ state.memory
        features = torch.tanh(self.mix(torch.cat([query, context], -1)))
        # (n, T, layers, heads, S): one layer of one head
        attention = weights[:, :, None, None, :] if need_attention else None
        return features, replace(state, attention=attention)


def build(
    config: ToyConfig,
    src_vocab: int,
    tgt_vocab: int,
    tokenizers: TokenizerPair | None = None,
) -> EncoderDecoder:
    d = config.d_model
    output = nn.Linear(d, tgt_vocab)
    return EncoderDecoder(ToyEncoder(src_vocab, d), ToyDecoder(tgt_vocab, d), output)
