"""Banned phrases as every token sequence that spells them.

A subword vocabulary writes one text in many ways: SentencePiece encodes
"a" as the piece "▁a", but "▁" followed by "a" decodes to the same text, and
a search that is kept from one reaches for the other. ``Spellings`` holds all
of them at once as a small graph: positions ``0..length`` along the phrase's
text, and an edge ``(start, token, end)`` wherever a token writes the text
between two positions. A token sequence spells the phrase exactly when it
walks from 0 to ``length``; ``spell`` finds the edges by dynamic programming
over the vocabulary, so the graph has at most ``length × longest token``
edges however many spellings (a product over its positions) it holds.
Decoding drops an output's leading whitespace, so at the start of an output a
spelling may also start after the phrase's leading spaces (``opening``):
"a" alone there decodes as "▁a" does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import torch

Edge = tuple[int, int, int]  # (start, token, end) along the phrase


@dataclass(frozen=True)
class Spellings:
    """Every token sequence that spells one banned phrase: the paths from
    position 0 (at an output's start: 0 to ``opening``) to ``length``
    through ``edges``."""

    length: int
    edges: tuple[Edge, ...]
    opening: int = 0  # the phrase's leading whitespace, in positions

    @classmethod
    def of_tokens(cls, tokens: Sequence[int]) -> Spellings:
        """One spelling: exactly ``tokens``."""
        return cls(len(tokens), tuple((i, t, i + 1) for i, t in enumerate(tokens)))

    def spells(self, tokens: Sequence[int]) -> bool:
        """Whether ``tokens`` is one of the spellings."""
        at = {0}
        for token in tokens:
            at = {end for start, t, end in self.edges if start in at and t == token}
        return bool(tokens) and self.length in at

    @property
    def single_tokens(self) -> set[int]:
        """The tokens that spell the phrase alone (never picked)."""
        return {
            token
            for start, token, end in self.edges
            if (start, end) == (0, self.length)
        }

    @property
    def most_tokens(self) -> int:
        """The length, in tokens, of the longest spelling (0: none)."""
        # tokens from a start to each position
        longest = [0 if p <= self.opening else -1 for p in range(self.length + 1)]
        for start, _, end in sorted(self.edges):
            if longest[start] >= 0:
                longest[end] = max(longest[end], longest[start] + 1)
        return max(longest[self.length], 0)

    @cached_property
    def _graph(self) -> tuple[torch.Tensor, ...]:
        """The edges' starts, tokens and ends (E,), and where each arrives
        (E, length + 1), made once."""
        start, token, end = torch.tensor(self.edges).view(-1, 3).unbind(1)
        arrive = torch.nn.functional.one_hot(end, self.length + 1).float()
        return start, token, end, arrive

    def rule_out(self, log_probs: torch.Tensor, prefixes: torch.Tensor) -> None:
        """Set to -inf, in place, each next token of ``log_probs`` (n, V) that
        would complete a spelling after ``prefixes`` (n, t)."""
        if not self.edges:
            return
        start, token, end, arrive = (x.to(prefixes.device) for x in self._graph)
        # which positions of the phrase each row's output has just reached; a
        # spelling may start after any token, so position 0 always is
        reached = prefixes.new_zeros((len(prefixes), self.length + 1), dtype=torch.bool)
        t = prefixes.size(1)
        for column in range(t - min(t, self.most_tokens - 1), t):
            reached[:, : self.opening + 1 if column == 0 else 1] = True
            walked = reached[:, start] & (prefixes[:, column, None] == token)  # (n, E)
            reached = (walked.float() @ arrive) > 0
        reached[:, : self.opening + 1 if t == 0 else 1] = True
        last = end == self.length
        rows, which = reached[:, start[last]].nonzero(as_tuple=True)
        log_probs[rows, token[last][which]] = float("-inf")


def spell(
    text: str, tokens_of: Mapping[str, Sequence[int]], forms: bool = False
) -> Spellings:
    """Every way to write ``text`` with the tokens whose texts ``tokens_of``
    maps to their ids (each token's text as it appears inside a decoded
    output); positions neither reached from a start nor leading to the end
    keep no edge. With ``forms``, a last token may also go on past the end
    with letters or digits (the word's other forms: "gs" ends "do|g")."""
    longest = max(map(len, tokens_of), default=0)
    opening = len(text) - len(text.lstrip())
    edges = [
        (i, token, j)
        for i in range(len(text))
        for j in range(i + 1, min(len(text), i + longest) + 1)
        for token in tokens_of.get(text[i:j], ())
    ]
    if forms:
        edges += [
            (i, token, len(text))
            for i in range(len(text))
            for written, tokens in tokens_of.items()
            if len(written) > len(text) - i
            and written.startswith(text[i:])
            and written[len(text) - i].isalnum()
            for token in tokens
        ]
    forward, backward = set(range(opening + 1)), {len(text)}
    for i, _, j in sorted(edges):
        if i in forward:
            forward.add(j)
    for i, _, j in sorted(edges, reverse=True):
        if j in backward:
            backward.add(i)
    useful = tuple(e for e in edges if e[0] in forward and e[2] in backward)
    if len(text) not in forward:
        return Spellings(len(text), ())
    return Spellings(len(text), useful, min(opening, len(text) - 1))
