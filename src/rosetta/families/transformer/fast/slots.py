"""The decoder's keys and values in slots of a fixed size: what a compiled
decoding step reads and writes.

The ``KeyValueCache`` of eager decoding grows: each step attends over one
more position, and beam search reorders rows into a new buffer, so no two
steps see tensors of the same shape. A compiled step, and above all a CUDA
graph (one recorded launch of every kernel of the step, replayed), needs the
same shapes and the same memory at every step. Here:

- every layer's keys and values live in one buffer of slots, (layers, 2,
  rows, heads, capacity, d_k), zeros until written;
- a step writes its new position into slot ``length`` (a tensor, so the
  step does not change with it) and attends over every slot, those not yet
  written masked out: a slot past the position is given weight 0, and a
  zero there cannot turn into NaN as uninitialised memory could;
- rows never shrink: where sentences finish (greedy) or leave the beam, the
  rows left are moved up in place and the rows after them repeat row 0,
  work thrown away, so the shapes hold; the memory side likewise;
- a full buffer doubles its capacity (a new shape, so at most a handful per
  batch), and a reorder to more rows than there are (beam search's first
  step, one row per sentence, then ``k``) makes a wider one;
- the source side is padded to a multiple of ``SOURCE_STEP`` positions
  (masked, zeros): batches of sources a few tokens apart share a shape.

A state is used once: stepping or reordering it writes into its buffer.
Search never returns to an earlier state, which is what makes this safe.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from rosetta.families.transformer.kv_cache import KeyValue, KeyValueCache
from rosetta.families.transformer.state import TransformerState, sentence_runs

INITIAL_SLOTS = 32  # positions; a full buffer doubles
SOURCE_STEP = 16  # source positions are padded to a multiple of this


class SlotCache:
    """The view a layer's step writes through: its new keys and values go
    into slot ``position`` of its part of ``slots``; it then reads them all."""

    def __init__(self, slots: torch.Tensor, position: torch.Tensor):
        self.slots = slots  # (layers, 2, rows, heads, capacity, d_k)
        self.at = position.view(1)

    def store(self, layer: int, keys: torch.Tensor, values: torch.Tensor) -> KeyValue:
        """Keys and values (rows, h, 1, d_k) of the new position; returns the
        layer's every slot, (rows, h, capacity, d_k) each."""
        stored_keys, stored_values = self.slots[layer, 0], self.slots[layer, 1]
        stored_keys.index_copy_(2, self.at, keys.to(stored_keys.dtype))
        stored_values.index_copy_(2, self.at, values.to(stored_values.dtype))
        return stored_keys, stored_values


@dataclass
class SlotState:
    """A Transformer decoding state kept in fixed shapes (module docstring).

    The memory side is ``TransformerState``'s: each run of ``group`` rows
    reads one row of ``src_mask`` and ``memory_kv``.
    """

    src_mask: torch.Tensor  # (m, 1, 1, S'), m = padded rows / group
    memory_kv: list[KeyValue]  # per layer, (m, heads, S', d_k) each
    slots: torch.Tensor  # (layers, 2, padded rows, heads, capacity, d_k)
    length: int  # positions written
    rows: int  # rows in use; those after them are padding
    source_length: int  # S: the positions of S' after it are padding
    group: int = 1
    attention: None = None  # a compiled step gives no attention weights

    @property
    def capacity(self) -> int:
        return self.slots.size(4)

    @classmethod
    def of(cls, state: TransformerState, dtype: torch.dtype) -> SlotState:
        """``state`` (its positions copied, if any) in slots of ``dtype``."""
        keys = state.memory_kv[0][0]
        rows = state.src_mask.size(0) * state.group
        layers, heads, d_k = len(state.memory_kv), keys.size(1), keys.size(3)
        capacity = INITIAL_SLOTS
        while capacity <= state.length:
            capacity *= 2
        shape = (layers, 2, rows, heads, capacity, d_k)
        slots = torch.zeros(shape, dtype=dtype, device=keys.device)
        if state.self_kv is not None and state.length:
            for layer in range(layers):
                for part, stored in enumerate(state.self_kv[layer]):
                    slots[layer, part, :, :, : state.length] = stored
        # copies, contiguous and no views, as reordered ones are (a compiled
        # graph checks layouts and views: one kind, one graph), the source
        # positions padded to a multiple of SOURCE_STEP
        pad = -state.src_mask.size(-1) % SOURCE_STEP
        memory_kv = [
            (padded_source(k, pad, -2), padded_source(v, pad, -2))
            for k, v in state.memory_kv
        ]
        src_mask = padded_source(state.src_mask, pad, -1)
        source = state.src_mask.size(-1)
        return cls(src_mask, memory_kv, slots, state.length, rows, source, state.group)

    def eager(self) -> TransformerState:
        """The same state as eager decoding keeps it."""
        memory_rows, source = self.rows // self.group, self.source_length
        self_kv = None
        if self.length:
            written = self.slots[:, :, : self.rows, :, : self.length]
            self_kv = KeyValueCache.from_pairs(
                [(layer[0], layer[1]) for layer in written]
            )
        return TransformerState(
            self.src_mask[:memory_rows, ..., :source],
            [
                (k[:memory_rows, :, :source], v[:memory_rows, :, :source])
                for k, v in self.memory_kv
            ],
            self_kv,
            self.length,
            group=self.group,
        )

    def with_room(self) -> SlotState:
        """This state with a free slot: the capacity doubled where it is full."""
        if self.length < self.capacity:
            return self
        shape = list(self.slots.shape)
        shape[4] *= 2
        slots = self.slots.new_zeros(shape)
        slots[..., : self.length, :] = self.slots
        return replace(self, slots=slots)

    def reorder(self, index: torch.Tensor) -> SlotState:
        """Row i of the result continues row ``index[i]``; as many padded
        rows as before (more, where ``index`` is longer)."""
        used = index.numel()
        padded_rows = max(self.slots.size(2), used)
        runs, group = sentence_runs(index, self.group)
        if padded_rows % group:  # the padding would split a run
            runs, group = torch.div(index, self.group, rounding_mode="floor"), 1
        memory_rows = padded_rows // group
        src_mask, memory_kv = self.src_mask, self.memory_kv
        kept = memory_rows == src_mask.size(0) and bool(
            (runs == torch.arange(runs.numel(), device=runs.device)).all()
        )
        if not kept:  # the rows after the runs read the first run's row
            picked = padded(runs, memory_rows)
            src_mask = src_mask.index_select(0, picked)
            memory_kv = [
                (k.index_select(0, picked), v.index_select(0, picked))
                for k, v in memory_kv
            ]
        picked = padded(index, padded_rows)
        written = self.slots[..., : self.length, :]
        moved = written.index_select(2, picked)
        slots = self.slots
        if padded_rows == slots.size(2):  # in place: the same memory
            written.copy_(moved)
        else:
            shape = list(slots.shape)
            shape[2] = padded_rows
            slots = slots.new_zeros(shape)
            slots[..., : self.length, :] = moved
        return SlotState(
            src_mask, memory_kv, slots, self.length, used, self.source_length, group
        )


def padded(index: torch.Tensor, rows: int) -> torch.Tensor:
    """``index`` followed by its first entry until it has ``rows`` entries."""
    return torch.cat([index, index[:1].expand(rows - index.numel())])


def padded_source(tensor: torch.Tensor, pad: int, dim: int) -> torch.Tensor:
    """A contiguous copy (no view of another tensor) with ``pad`` zeros
    (False) after the source positions along ``dim``."""
    shape = list(tensor.shape)
    shape[dim] += pad
    copied = tensor.new_zeros(shape)
    copied.narrow(dim, 0, tensor.size(dim)).copy_(tensor)
    return copied
