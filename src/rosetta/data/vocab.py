"""Vocabulary: tokens <-> ids, with four special symbols: padding, unknown,
begin and end of sentence."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<bos>", "<eos>"
SPECIALS = (PAD, UNK, BOS, EOS)
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3


class Vocabulary:
    """A fixed token list; ids 0-3 are ``<pad> <unk> <bos> <eos>``."""

    def __init__(self, tokens: Iterable[str]):
        tokens = list(tokens)
        if tuple(tokens[:4]) != SPECIALS:
            raise ValueError(f"a vocabulary starts with {SPECIALS}")
        self.tokens = tokens
        self.index = {token: i for i, token in enumerate(tokens)}
        if len(self.index) != len(tokens):
            raise ValueError("duplicate tokens in vocabulary")

    @classmethod
    def build(
        cls,
        sentences: Iterable[list[str]],
        min_freq: int = 1,
        max_size: int | None = None,
    ) -> Vocabulary:
        """Count tokens; those seen fewer than ``min_freq`` times become ``<unk>``.

        Ties in frequency are broken alphabetically so the result is deterministic.
        """
        counts = Counter(token for sentence in sentences for token in sentence)
        for special in SPECIALS:
            counts.pop(special, None)
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        kept = [token for token, count in ranked if count >= min_freq]
        if max_size is not None:
            kept = kept[: max(0, max_size - len(SPECIALS))]
        return cls([*SPECIALS, *kept])

    def __len__(self) -> int:
        return len(self.tokens)

    def to_ids(self, tokens: Iterable[str]) -> list[int]:
        return [self.index.get(token, UNK_ID) for token in tokens]

    def to_tokens(self, ids: Iterable[int]) -> list[str]:
        return [self.tokens[i] for i in ids]
