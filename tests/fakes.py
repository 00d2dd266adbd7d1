"""A fake model whose next-token distributions are set by hand, for search tests."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch

BOS, EOS = 2, 3


@dataclass
class PrefixState:
    prefixes: list[tuple[int, ...]]  # tokens decoded so far, per row

    def reorder(self, index: torch.Tensor) -> PrefixState:
        return replace(self, prefixes=[self.prefixes[i] for i in index.tolist()])


class TableModel:
    """``table[prefix] = {token: probability}``; prefixes not listed end with <eos>."""

    def __init__(self, table: dict[tuple[int, ...], dict[int, float]], vocab: int):
        self.table, self.vocab = table, vocab

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        return src

    def init_state(self, memory: torch.Tensor, src_mask: torch.Tensor) -> PrefixState:
        return PrefixState([() for _ in range(memory.size(0))])

    def step(self, prev: torch.Tensor, state: PrefixState):
        prefixes = [
            (*p, t) if t != BOS else p
            for p, t in zip(state.prefixes, prev.tolist(), strict=True)
        ]
        rows = []
        for prefix in prefixes:
            row = torch.full((self.vocab,), -math.inf, dtype=torch.float32)
            for token, prob in self.table.get(prefix, {EOS: 1.0}).items():
                row[token] = math.log(prob)
            rows.append(row)
        return torch.stack(rows), PrefixState(prefixes)

    def log_prob(self, tokens: list[int]) -> float:
        total, prefix = 0.0, ()
        for token in tokens:
            total += math.log(self.table.get(prefix, {EOS: 1.0})[token])
            prefix = (*prefix, token)
        return total
