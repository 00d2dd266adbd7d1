"""The decoder's self-attention keys and values, kept while decoding.

A decoding step adds one position to every decoder layer's keys and values
and attends over all of them. Concatenating the new
position to the old tensors copies them all at every step, and beam search
copies them once more to reorder rows, a cost that grows with the length
decoded. Here every layer's keys and values live in one buffer, (rows,
capacity, layers, 2, heads, d_k):

- a step writes its new position in place: nothing earlier is copied;
- reordering rows (beam search, finished sentences) is one ``index_select``
  over all layers (a row's positions are contiguous), into a buffer with room
  for the next position;
- a layer's keys and values are strided views, (rows, heads, length, d_k).

Several states can share a buffer: a state and the one its step returned.
A step writes past its own state's positions, so it writes in place only
when nobody has written there yet (the buffer's ``written`` count equals
the state's length); otherwise, as when one state is stepped twice, it first
copies its positions into a buffer of its own.
"""

from __future__ import annotations

import torch

KeyValue = tuple[torch.Tensor, torch.Tensor]  # (n, h, L, d_k) each

INITIAL_CAPACITY = 16  # positions; a full buffer doubles


class KeyValueCache:
    """Keys and values of positions ``[0, length)`` of every layer."""

    def __init__(self, buffer: torch.Tensor, length: int, written: list[int]):
        self.buffer = buffer  # (rows, capacity, layers, 2, heads, d_k)
        self.length = length
        # positions of ``buffer`` written so far, shared by all its caches
        self._written = written

    @classmethod
    def empty(
        cls,
        rows: int,
        layers: int,
        heads: int,
        d_k: int,
        dtype: torch.dtype,
        device: torch.device,
        capacity: int = INITIAL_CAPACITY,
    ) -> KeyValueCache:
        """No positions yet."""
        shape = (rows, capacity, layers, 2, heads, d_k)
        return cls(torch.empty(shape, dtype=dtype, device=device), 0, [0])

    @classmethod
    def from_pairs(cls, pairs: list[KeyValue]) -> KeyValueCache:
        """From per-layer keys and values (n, h, L, d_k), as concatenated ones."""
        keys, values = pairs[0]
        n, heads, length, d_k = keys.shape
        cache = cls.empty(
            n, len(pairs), heads, d_k, keys.dtype, keys.device, capacity=length + 1
        )
        cache = cache.extend(length)
        for layer, (keys, values) in enumerate(pairs):
            cache.store(layer, keys, values)
        return cache

    @property
    def rows(self) -> int:
        return self.buffer.size(0)

    @property
    def capacity(self) -> int:
        return self.buffer.size(1)

    def extend(self, new: int) -> KeyValueCache:
        """A cache ``new`` positions longer; each layer then ``store``s them."""
        end = self.length + new
        if self._written[0] == self.length and end <= self.capacity:
            self._written[0] = end  # nobody wrote past us: write in place
            return KeyValueCache(self.buffer, end, self._written)
        capacity = max(end, 2 * self.capacity)
        buffer = self.buffer.new_empty(self._shape(self.rows, capacity))
        buffer[:, : self.length] = self.buffer[:, : self.length]
        return KeyValueCache(buffer, end, [end])

    def store(self, layer: int, keys: torch.Tensor, values: torch.Tensor) -> KeyValue:
        """A layer's keys and values (n, h, new, d_k) of the newest positions;
        returns the layer's keys and values of every position, as ``self[layer]``."""
        start = self.length - keys.size(2)
        self.buffer[:, start : self.length, layer, 0] = keys.transpose(1, 2)
        self.buffer[:, start : self.length, layer, 1] = values.transpose(1, 2)
        return self[layer]

    def store_step(self, layer: int, keys_values: torch.Tensor) -> None:
        """A layer's keys and values (n, 2, h, d_k) of the one newest position."""
        self.buffer[:, self.length - 1, layer] = keys_values

    def __getitem__(self, layer: int) -> KeyValue:
        """The layer's keys and values so far, views (n, h, length, d_k)."""
        both = self.buffer[:, : self.length, layer]  # (n, L, 2, h, d_k)
        return both[:, :, 0].transpose(1, 2), both[:, :, 1].transpose(1, 2)

    def reorder(self, index: torch.Tensor) -> KeyValueCache:
        """Row i of the result is row ``index[i]``; room for one more position."""
        buffer = self.buffer.new_empty(self._shape(index.numel(), self.length + 1))
        torch.index_select(
            self.buffer[:, : self.length], 0, index, out=buffer[:, : self.length]
        )
        return KeyValueCache(buffer, self.length, [self.length])

    def _shape(self, rows: int, capacity: int) -> tuple[int, ...]:
        return (rows, capacity, *self.buffer.shape[2:])
