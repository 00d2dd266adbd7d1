"""Encoded examples, token-budget batches with length bucketing, and the
teacher-forcing shift.

The encoder input is ``source + <eos>``; the decoder input is
``<bos> + target`` (shifted right) and the label is ``target + <eos>``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

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
    lengths, ids = flattened(sequences)
    return torch.from_numpy(padded_rows(ids, lengths))


def flattened(sequences: Iterable[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """(lengths, ids one sequence after another), both int64."""
    sequences = list(sequences)
    lengths = np.fromiter(map(len, sequences), np.int64, len(sequences))
    ids = np.fromiter(chain.from_iterable(sequences), np.int64, int(lengths.sum()))
    return lengths, ids


def padded_rows(
    ids: np.ndarray,
    lengths: np.ndarray,
    before: int | None = None,
    after: int | None = None,
) -> np.ndarray:
    """The rows that ``ids`` holds one after another (row i: ``lengths[i]``
    ids) as one (n, width) int64 array, each row with ``before`` in front and
    ``after`` behind where given, right-padded with ``<pad>`` to the longest.

    Every id is placed by one scatter, whatever the number of rows: a row at
    a time would cost a tensor and a copy per sentence.
    """
    shift = int(before is not None)
    width = int(lengths.max()) + shift + int(after is not None)
    out = np.full((len(lengths), width), PAD_ID, dtype=np.int64)
    if before is not None:
        out[:, 0] = before
    row_starts = np.cumsum(lengths) - lengths  # row i's first id in ids
    rows = np.repeat(np.arange(len(lengths)), lengths)
    columns = np.arange(len(ids)) - np.repeat(row_starts, lengths) + shift
    out[rows, columns] = ids
    if after is not None:
        out[np.arange(len(lengths)), lengths + shift] = after
    return out


def collate(examples: list[Example]) -> Batch:
    """Build the encoder input, decoder input and label."""
    src_lengths, src_ids = flattened(e.src for e in examples)
    tgt_lengths, tgt_ids = flattened(e.tgt for e in examples)
    return collate_flat(src_ids, src_lengths, tgt_ids, tgt_lengths)


def collate_flat(
    src_ids: np.ndarray,
    src_lengths: np.ndarray,
    tgt_ids: np.ndarray,
    tgt_lengths: np.ndarray,
) -> Batch:
    """``collate`` of pairs given side by side as their ids one after another
    and their lengths (``flattened``), as a token store holds them."""
    src_lengths = src_lengths.astype(np.int64)
    tgt_lengths = tgt_lengths.astype(np.int64)
    return Batch(
        src=torch.from_numpy(padded_rows(src_ids, src_lengths, after=EOS_ID)),
        src_lengths=torch.from_numpy(src_lengths + 1),
        tgt_in=torch.from_numpy(padded_rows(tgt_ids, tgt_lengths, before=BOS_ID)),
        tgt_out=torch.from_numpy(padded_rows(tgt_ids, tgt_lengths, after=EOS_ID)),
        tgt_lengths=torch.from_numpy(tgt_lengths + 1),
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
    own. Sorting and cutting are numpy's and linear in the number of pairs.
    """
    count = len(src_lengths)
    if not count:
        return []
    src_max, tgt_max = int(src_lengths.max()), int(tgt_lengths.max())
    # by target length, then source length, as one key: a stable sort keeps
    # the random order of ties (for 16-bit keys numpy's is a radix sort, O(n))
    small = (tgt_max + 1) * (src_max + 1) < 2**16
    kind = np.dtype(np.uint16 if small else np.int64)
    src, tgt = src_lengths.astype(kind), tgt_lengths.astype(kind)
    key = tgt * kind.type(src_max + 1) + src
    padded = np.maximum(src, tgt) + kind.type(1)
    order = np.arange(count, dtype=np.int32)  # half the memory of int64 indices
    if rng is not None:
        rng.shuffle(order)  # the same draws as rng.permutation(count)
    order = order[np.argsort(key[order], kind="stable")]
    batches = np.split(order, cut_runs(padded[order], batch_tokens))
    if rng is not None:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def cut_runs(padded: np.ndarray, batch_tokens: int) -> list[int]:
    """Where batches of the sorted pairs begin (but the first): a pair joins
    the batch unless the batch, padded to its longest, would then exceed the
    budget (a pair over the budget alone still makes a batch).

    Sorted pairs come in long runs of one padded length, so the rule is
    applied a run at a time: a run of length ``v`` fills what the open batch
    has room for (``budget // max(longest, v)`` pairs in all), then whole
    batches of ``budget // v`` pairs, and its rest opens the next batch.
    """
    change = np.flatnonzero(padded[1:] != padded[:-1]) + 1
    starts = np.concatenate([[0], change])
    run_lengths = np.diff(np.concatenate([starts, [len(padded)]]))
    cuts: list[int] = []
    size = longest = 0  # the open batch: pairs and padded length
    for start, count, length in zip(
        starts.tolist(), run_lengths.tolist(), padded[starts].tolist(), strict=True
    ):
        if size:
            room = batch_tokens // max(longest, length) - size
            if room >= count:
                size, longest = size + count, max(longest, length)
                continue
            start, count = start + max(room, 0), count - max(room, 0)
            cuts.append(start)
        full = max(1, batch_tokens // length)
        cuts.extend(range(start + full, start + count, full))
        size, longest = count - full * ((count - 1) // full), length
    return cuts


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
