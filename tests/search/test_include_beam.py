"""Beam search's part in phrases to include (``rosetta.search.include_beam``)
and the steps every search shares: the first step after a fed prefix, the
output limits."""

from __future__ import annotations

import pytest
import torch

from rosetta.search.constraints import BatchConstraints, TokenConstraints
from rosetta.search.controls import Controls
from rosetta.search.fed_prefix import FedPrefix, NextTokens
from rosetta.search.greedy import output_limits
from rosetta.search.include_beam import IncludeAllocation

EOS, INF = 3, float("-inf")


def includes(*phrases: tuple[int, ...]) -> IncludeAllocation:
    batch = BatchConstraints([TokenConstraints(include=phrases)], EOS, "cpu")
    allocation = IncludeAllocation.of(batch)
    assert allocation is not None
    return allocation


def test_a_search_without_phrases_to_include_allocates_nothing():
    assert IncludeAllocation.of(None) is None
    prefix_only = BatchConstraints([TokenConstraints(prefix=(4,))], EOS, "cpu")
    assert IncludeAllocation.of(prefix_only) is None


def test_the_tokens_met_count_the_fed_prefix():
    allocation = includes((4, 5), (6,))
    fed = torch.tensor([[[4, 5], [4, 5]]])  # (a, k, m)
    assert allocation.start(torch.tensor([0]), 2, fed).tolist() == [[[2, 0], [2, 0]]]
    nothing = torch.zeros((1, 2, 0), dtype=torch.long)
    assert allocation.start(torch.tensor([0]), 2, nothing).tolist() == [[[0, 0]] * 2]


def test_the_next_token_of_each_phrase_not_met_is_a_candidate_too():
    allocation = includes((4, 5), (6,), (7,))
    log_probs = torch.log(torch.tensor([[0.1, 0.1, 0.1, 0.1, 0.2, 0.1, 0.2, 0.1]]))
    row_tokens = torch.tensor([[4]])  # the row's best token
    row_scores = log_probs.gather(1, row_tokens)
    matched = torch.tensor([[0, 0, 1]])  # the phrase (7,) is met
    scores, tokens = allocation.add_wanted(
        log_probs, row_scores, row_tokens, matched, torch.tensor([0])
    )
    assert tokens.tolist() == [[4, 4, 6, 0]]
    # 4 is among the best already, (7,) is met: neither is a new candidate
    assert scores[0, 1:].tolist() == [INF, float(log_probs[0, 6]), INF]


def test_the_beam_goes_to_every_bank_before_the_best_scores():
    """Two places, one phrase of one token: the best candidate of bank 1
    (it met the phrase) takes one though three candidates of bank 0 score
    better."""
    allocation = includes((7,))
    candidates = torch.tensor([[[-1.0, -2.0, -3.0, -4.0]]], dtype=torch.float64)
    row_tokens = torch.tensor([[[4, 5, 6, 7]]])
    live = torch.zeros((1, 1, 1), dtype=torch.long)
    scores, index, matched = allocation.choose(
        candidates, row_tokens, live, torch.tensor([0]), 2
    )
    assert index.tolist() == [[3, 0]]  # most met first
    assert scores.tolist() == [[-4.0, -1.0]]
    assert matched.tolist() == [[[1], [0]]]
    assert allocation.unmet(matched, torch.tensor([0])).tolist() == [[False, True]]


class OneStep:
    """A model whose every step gives the same log-probabilities."""

    def __init__(self, log_probs: torch.Tensor):
        self.log_probs, self.steps = log_probs, 0

    def step(self, prev, state):
        self.steps += 1
        return self.log_probs.clone().expand(len(prev), -1).clone(), state


def test_the_first_step_after_a_fed_prefix_takes_the_log_probs_already_computed():
    model = OneStep(torch.log(torch.full((1, 6), 1 / 6)))
    after = torch.zeros((1, 6))
    fed = FedPrefix(1, torch.tensor([[4]]), torch.zeros(1), after, state="fed")
    next_tokens = NextTokens(model, Controls(), fed)
    log_probs, state = next_tokens(torch.tensor([4]), "fed", torch.tensor([[4]]))
    assert model.steps == 0 and state == "fed"
    assert log_probs[0, 0] == INF and log_probs[0, 4] == 0.0  # <pad> ruled out
    log_probs, _ = next_tokens(torch.tensor([5]), "fed", torch.tensor([[4, 5]]))
    assert model.steps == 1 and log_probs[0, 4] != 0.0


def test_without_a_fed_prefix_every_step_is_the_models():
    model = OneStep(torch.log(torch.full((1, 6), 1 / 6)))
    NextTokens(model, Controls())(torch.tensor([2]), None, torch.zeros((1, 0)))
    assert model.steps == 1


def test_output_limits_make_room_for_the_constraints_and_check_the_controls():
    mask = torch.ones((2, 3), dtype=torch.bool)
    batch = BatchConstraints(
        [TokenConstraints(include=((4, 5),)), TokenConstraints()], EOS, "cpu"
    )
    limits = output_limits(mask, 0.0, 1, None, batch, Controls())
    assert limits.tolist() == [3, 1]  # two phrase tokens and <eos>
    with pytest.raises(ValueError, match="minimum length 2 is beyond"):
        output_limits(mask, 0.0, 1, None, None, Controls(min_length=2, eos_id=EOS))
