"""A fake model whose next-token distributions are set by hand, for search tests."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace

import torch

from rosetta.config.sections import DecodeConfig

# The length limit of a model configured with the defaults (decode.max_len_*).
CONFIG_LIMIT = {
    "max_len_a": DecodeConfig().max_len_a,
    "max_len_b": DecodeConfig().max_len_b,
}

BOS, EOS = 2, 3


Table = dict[tuple[int, ...], dict[int, float]]


@dataclass
class PrefixState:
    prefixes: list[tuple[int, ...]]  # tokens decoded so far, per row
    sentences: list[int]  # which sentence (and table) each row belongs to
    attention: torch.Tensor | None = None

    def reorder(self, index: torch.Tensor) -> PrefixState:
        rows = index.tolist()
        return replace(
            self,
            prefixes=[self.prefixes[i] for i in rows],
            sentences=[self.sentences[i] for i in rows],
        )


class TableModel:
    """``table[prefix] = {token: probability}``; prefixes not listed end with <eos>.

    With a list of tables, sentence ``i`` of a batch (``src[i, 0] == i``) uses
    ``tables[i]``. Every step's expanded prefixes are recorded in ``calls``.
    """

    def __init__(self, table: Table | list[Table], vocab: int):
        self.tables = table if isinstance(table, list) else None
        self.table = table if isinstance(table, dict) else {}
        self.vocab = vocab
        self.calls: list[list[tuple[int, tuple[int, ...]]]] = []

    def table_of(self, sentence: int) -> Table:
        return self.table if self.tables is None else self.tables[sentence]

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        return src

    def init_state(self, memory: torch.Tensor, src_mask: torch.Tensor) -> PrefixState:
        return PrefixState([() for _ in range(memory.size(0))], memory[:, 0].tolist())

    def step(self, prev: torch.Tensor, state: PrefixState):
        prefixes = [
            (*p, t) if t != BOS else p
            for p, t in zip(state.prefixes, prev.tolist(), strict=True)
        ]
        self.calls.append(list(zip(state.sentences, prefixes, strict=True)))
        rows = []
        for sentence, prefix in zip(state.sentences, prefixes, strict=True):
            row = torch.full((self.vocab,), -math.inf, dtype=torch.float32)
            for token, prob in self.table_of(sentence).get(prefix, {EOS: 1.0}).items():
                row[token] = math.log(prob)
            rows.append(row)
        return torch.stack(rows), PrefixState(prefixes, state.sentences)

    def log_prob(self, tokens: list[int], sentence: int = 0) -> float:
        table, total, prefix = self.table_of(sentence), 0.0, ()
        for token in tokens:
            total += math.log(table.get(prefix, {EOS: 1.0})[token])
            prefix = (*prefix, token)
        return total


def random_table(rng: random.Random, tokens: list[int], depth: int) -> Table:
    """A random prefix tree: each prefix continues with some tokens or <eos>."""
    table: Table = {}

    def grow(prefix: tuple[int, ...]) -> None:
        if len(prefix) == depth:
            return
        choices = rng.sample(tokens, rng.randint(1, len(tokens)))
        if prefix and rng.random() < 0.6:
            choices.append(EOS)
        weights = [rng.random() + 0.05 for _ in choices]
        table[prefix] = {
            c: w / sum(weights) for c, w in zip(choices, weights, strict=True)
        }
        for c in choices:
            if c != EOS:
                grow((*prefix, c))

    grow(())
    return table


def sequences_of(table: Table, depth: int) -> int:
    """How many complete sequences the tree holds (ending in <eos> or at depth)."""

    def count(prefix: tuple[int, ...]) -> int:
        if len(prefix) == depth:
            return 1
        nexts = table.get(prefix, {EOS: 1.0})
        return sum(1 if t == EOS else count((*prefix, t)) for t in nexts)

    return count(())
