"""Encoded examples, token-budget batches with length bucketing, and the
teacher-forcing shift.

The encoder input is ``source + <eos>``; the decoder input is
``<bos> + target`` (shifted right) and the label is ``target + <eos>``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from rosetta.data.corpus import FilterReport
from rosetta.data.tokenizer import TokenizerPair
from rosetta.data.vocab import BOS_ID, EOS_ID, PAD_ID


@dataclass(frozen=True)
class Example:
    src: list[int]
    tgt: list[int]


def encode_pairs(
    pairs: list[tuple[str, str]], tokenizers: TokenizerPair, max_len: int
) -> tuple[list[Example], FilterReport]:
    """Tokenize pairs, dropping empty ones and those longer than ``max_len`` tokens."""
    report = FilterReport(read=len(pairs))
    examples = []
    for src_text, tgt_text in pairs:
        if not src_text.strip() or not tgt_text.strip():
            report.drop("empty")
            continue
        src, tgt = tokenizers.src.encode(src_text), tokenizers.tgt.encode(tgt_text)
        if len(src) + 1 > max_len or len(tgt) + 1 > max_len:
            report.drop(f"longer than {max_len} tokens")
            continue
        examples.append(Example(src, tgt))
    report.kept = len(examples)
    return examples, report


@dataclass
class Batch:
    """Padded tensors for one training step. All are (n, length) and batch-first."""

    src: torch.Tensor  # (n, S) source + <eos>, padded
    src_lengths: torch.Tensor  # (n,)
    tgt_in: torch.Tensor  # (n, T) <bos> + target, padded
    tgt_out: torch.Tensor  # (n, T) target + <eos>, padded
    tgt_lengths: torch.Tensor  # (n,)

    @property
    def src_mask(self) -> torch.Tensor:
        """(n, S) bool, True at real tokens (may attend)."""
        return self.src != PAD_ID

    @property
    def num_tgt_tokens(self) -> int:
        return int(self.tgt_lengths.sum())

    def to(self, device: torch.device) -> Batch:
        return Batch(*(t.to(device) for t in self.__dict__.values()))


def pad(sequences: list[list[int]]) -> torch.Tensor:
    """Right-pad id lists with ``<pad>`` into an (n, max_len) LongTensor."""
    width = max(len(s) for s in sequences)
    out = torch.full((len(sequences), width), PAD_ID, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        out[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
    return out


def collate(examples: list[Example]) -> Batch:
    """Build the encoder input, decoder input and label."""
    src = [[*e.src, EOS_ID] for e in examples]
    tgt_in = [[BOS_ID, *e.tgt] for e in examples]
    tgt_out = [[*e.tgt, EOS_ID] for e in examples]
    return Batch(
        src=pad(src),
        src_lengths=torch.tensor([len(s) for s in src]),
        tgt_in=pad(tgt_in),
        tgt_out=pad(tgt_out),
        tgt_lengths=torch.tensor([len(t) for t in tgt_out]),
    )


def make_batches(
    src_lengths: np.ndarray,
    tgt_lengths: np.ndarray,
    batch_tokens: int,
    rng: np.random.Generator | None = None,
) -> list[np.ndarray]:
    """Group pair indices into batches of at most ``batch_tokens`` padded tokens.

    ``src_lengths`` and ``tgt_lengths`` are the pairs' token counts (without
    ``<eos>`` or ``<bos>``). Pairs are sorted by (target, source) length so a
    batch holds similar lengths (little padding); with ``rng`` ties are broken
    at random and the batch order is shuffled, so every epoch differs but
    stays reproducible. The budget counts ``n * max(padded source, padded
    target)``; a single pair longer than the budget still forms a batch of its
    own. Sorting is numpy's, and so is finding the cuts where batches are large.
    """
    count = len(src_lengths)
    order = np.arange(count) if rng is None else rng.permutation(count)
    order = order.astype(np.int32)  # half the memory of int64 indices
    # by target length, then source length, as one key: a stable sort keeps
    # the random order of ties (for 16-bit keys numpy's is a radix sort, O(n))
    src_len, tgt_len = src_lengths[order], tgt_lengths[order]
    key = tgt_len.astype(np.int64) * (int(src_len.max(initial=0)) + 1) + src_len
    if key.max(initial=0) < 2**16:
        key = key.astype(np.uint16)
    order = order[np.argsort(key, kind="stable")]

    if not count:
        return []
    padded = np.maximum(src_lengths[order], tgt_lengths[order]) + 1
    cut = cut_by_batch if batch_tokens >= 16 * float(padded.mean()) else cut_by_pair
    batches = np.split(order, cut(padded, batch_tokens))
    if rng is not None:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def cut_by_pair(padded: np.ndarray, batch_tokens: int) -> list[int]:
    """Where batches of the sorted pairs begin (but the first): a pair joins
    the batch unless the batch, padded to its longest, would then exceed the
    budget. One pair at a time: the fastest way for batches of a few pairs."""
    cuts: list[int] = []
    size = longest = 0
    for position, length in enumerate(padded.tolist()):
        if size and max(longest, length) * (size + 1) > batch_tokens:
            cuts.append(position)
            size = longest = 0
        size += 1
        longest = max(longest, length)
    return cuts


def cut_by_batch(padded: np.ndarray, batch_tokens: int) -> list[int]:
    """The cuts of ``cut_by_pair``, one batch at a time: a batch starting at
    ``start`` ends before the first pair k >= 1 at which its running longest
    times its size, ``max(padded[start:start+k+1]) * (k + 1)``, exceeds the
    budget. Fast where batches hold many pairs."""
    floor = np.minimum.accumulate(padded[::-1])[::-1]  # the shortest from here on
    cuts: list[int] = []
    start = 0
    while True:
        most = max(1, batch_tokens // int(floor[start]))  # no batch here is larger
        widest = np.maximum.accumulate(padded[start : start + most + 1])
        over = widest * np.arange(1, len(widest) + 1) > batch_tokens
        over[0] = False  # a pair over the budget still makes a batch alone
        end = start + (int(over.argmax()) if over.any() else len(widest))
        if end >= len(padded):
            return cuts
        cuts.append(end)
        start = end


def padding_share(
    src_lengths: np.ndarray, tgt_lengths: np.ndarray, batches: list[np.ndarray]
) -> float:
    """Fraction of padded slots (source and target together) over all batches."""
    if not batches:
        return 0.0
    index = np.concatenate(batches)
    sizes = np.array([len(batch) for batch in batches])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    src, tgt = src_lengths[index] + 1, tgt_lengths[index] + 1
    widest = np.maximum.reduceat(src, starts) + np.maximum.reduceat(tgt, starts)
    return 1.0 - float(src.sum() + tgt.sum()) / float((sizes * widest).sum())


def rank_share(
    group: list[list[int]], rank: int, world_size: int
) -> list[tuple[list[int], bool]]:
    """One process's batches of one update: every ``world_size``-th batch of
    ``group`` from ``rank``, each with True, then as many (batch, False) as it
    takes to make every process's count equal.

    An update's last group may not divide evenly; the processes with fewer
    batches run a real batch with weight 0 instead (data-parallel training
    needs every process in every gradient exchange), so no batch is dropped
    and none is counted twice.
    """
    mine = [(batch, True) for batch in group[rank::world_size]]
    count = -(-len(group) // world_size)  # the largest share
    filler = (mine[0][0] if mine else group[0], False)
    return mine + [filler] * (count - len(mine))
