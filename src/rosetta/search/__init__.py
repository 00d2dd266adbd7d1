"""Search algorithms that drive any model through encode / init_state / step."""

from rosetta.search.batched import decode_in_batches
from rosetta.search.beam import beam_search, length_penalty, normalized_score
from rosetta.search.exhaustive import exhaustive_search
from rosetta.search.greedy import Hypothesis, greedy_search, max_lengths
from rosetta.search.options import SearchOptions, search
from rosetta.search.sampling import sampler

__all__ = [
    "Hypothesis",
    "SearchOptions",
    "beam_search",
    "decode_in_batches",
    "exhaustive_search",
    "greedy_search",
    "length_penalty",
    "max_lengths",
    "normalized_score",
    "sampler",
    "search",
]
