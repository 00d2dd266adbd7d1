"""Search algorithms that drive any model through encode / init_state / step.

The names below are imported when first used (``rosetta.runtime.lazy``): the
search options (``rosetta.search.options``) load no PyTorch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rosetta.runtime.lazy import exports

if TYPE_CHECKING:
    from rosetta.search.batched import decode_in_batches
    from rosetta.search.beam import beam_search, length_penalty, normalized_score
    from rosetta.search.dispatch import search
    from rosetta.search.exhaustive import exhaustive_search
    from rosetta.search.greedy import Hypothesis, greedy_search, max_lengths
    from rosetta.search.options import SearchOptions
    from rosetta.search.sampling import sampler

WHERE = {
    "decode_in_batches": "rosetta.search.batched",
    **dict.fromkeys(
        ["beam_search", "length_penalty", "normalized_score"], "rosetta.search.beam"
    ),
    "search": "rosetta.search.dispatch",
    "exhaustive_search": "rosetta.search.exhaustive",
    **dict.fromkeys(
        ["Hypothesis", "greedy_search", "max_lengths"], "rosetta.search.greedy"
    ),
    "SearchOptions": "rosetta.search.options",
    "sampler": "rosetta.search.sampling",
}
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
__getattr__ = exports(__name__, WHERE)
