"""Search algorithms that drive any model through encode / init_state / step."""

from rosetta.decode.batched import decode_in_batches
from rosetta.decode.greedy import Hypothesis, greedy_search, max_lengths

__all__ = ["Hypothesis", "decode_in_batches", "greedy_search", "max_lengths"]
