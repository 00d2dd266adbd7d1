"""Search algorithms that drive any model through encode / init_state / step."""

from rosetta.decode.greedy import Hypothesis, greedy_search, max_lengths

__all__ = ["Hypothesis", "greedy_search", "max_lengths"]
