"""The Transformer decoder's state between steps."""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from rosetta.families.transformer.kv_cache import KeyValue, KeyValueCache


@dataclass
class TransformerState:
    """Decoding state: cross-attention keys/values of the memory (computed once),
    self-attention keys/values of the tokens decoded so far, and their count.

    The memory side is kept once per sentence: each run of ``group``
    consecutive decoding rows (a sentence's beams) shares one row of
    ``src_mask`` and ``memory_kv``, so reordering beams never copies it.
    """

    src_mask: torch.Tensor  # (m, 1, 1, S) bool, m = n / group
    memory_kv: list[KeyValue]  # per layer, (m, heads, S, d_k) each
    # every layer's self-attention keys and values so far; None before the
    # first token, and after teacher forcing (nothing continues a padded batch)
    self_kv: KeyValueCache | None
    length: int = 0
    attention: torch.Tensor | None = None  # (n, t, layers, heads, S) if asked
    group: int = 1  # decoding rows per memory row
    # what the position scheme hands the next step, one row per decoding row
    # (positions inside numbers: the last token's place, which the next continues)
    carried: torch.Tensor | None = None
    # the source's positions where training drew them, or its places inside
    # numbers (m, S): distance penalties
    source_positions: torch.Tensor | None = None

    def reorder(self, index: torch.Tensor) -> TransformerState:
        """Row i of the result continues row ``index[i]``."""

        def pick(kv: KeyValue, rows: torch.Tensor) -> KeyValue:
            return kv[0].index_select(0, rows), kv[1].index_select(0, rows)

        runs, group = sentence_runs(index, self.group)
        src_mask, memory_kv = self.src_mask, self.memory_kv
        source_positions = self.source_positions
        unchanged = runs.numel() == src_mask.size(0) and bool(
            (runs == torch.arange(runs.numel(), device=runs.device)).all()
        )
        if not unchanged:
            src_mask = src_mask.index_select(0, runs)
            memory_kv = [pick(kv, runs) for kv in memory_kv]
            if source_positions is not None:  # one row per memory row, too
                source_positions = source_positions.index_select(0, runs)
        return replace(
            self,
            src_mask=src_mask,
            memory_kv=memory_kv,
            self_kv=None if self.self_kv is None else self.self_kv.reorder(index),
            attention=None
            if self.attention is None
            else self.attention.index_select(0, index),
            group=group,
            carried=None
            if self.carried is None
            else self.carried.index_select(0, index),
            source_positions=source_positions,
        )


def sentence_runs(index: torch.Tensor, group: int) -> tuple[torch.Tensor, int]:
    """The memory rows that decoding rows ``index`` read, where each run of
    ``group`` rows reads one: one entry per run of equal rows and the run's
    length, or, where the runs are uneven, one entry per row and 1."""
    sentences = torch.div(index, group, rounding_mode="floor")
    runs, counts = torch.unique_consecutive(sentences, return_counts=True)
    length = int(counts[0]) if counts.numel() else 1
    if not bool((counts == length).all()):  # uneven: one memory row per row
        return sentences, 1
    return runs, length
