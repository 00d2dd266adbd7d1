"""Search algorithms that drive any model through encode / init_state / step."""

from rosetta.decode.batched import decode_in_batches
from rosetta.decode.beam import beam_search, length_penalty, normalized_score
from rosetta.decode.exhaustive import exhaustive_search
from rosetta.decode.greedy import Hypothesis, greedy_search, max_lengths
from rosetta.decode.options import SearchOptions, search
from rosetta.decode.sampling import sampler

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
