"""The steps beam search is made of (``rosetta.search.beam``,
``rosetta.search.live_beam``), each on small tensors written by hand."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from rosetta.search.beam import (
    BeamSettings,
    Lengths,
    best_expansions,
    finish,
    has_stopped,
    length_penalty,
)
from rosetta.search.finished import FinishedCandidates
from rosetta.search.live_beam import Expansions, LiveBeam, attention_history

INF = float("-inf")
EOS = 3


def settings(**options) -> BeamSettings:
    return BeamSettings(**{"bos_id": 2, "eos_id": EOS, "beam_size": 2} | options)


def lengths_of(limits: list[int], alpha: float = 1.0) -> Lengths:
    return Lengths.of(torch.tensor(limits), settings(alpha=alpha))


def beam(scores, tokens, rows: int = 2) -> LiveBeam:
    scores = torch.tensor(scores, dtype=torch.float64)
    a = scores.size(0)
    tokens = torch.tensor(tokens, dtype=torch.long).view(a, scores.size(1), -1)
    prev = tokens[:, :rows, -1] if tokens.size(2) else torch.full((a, rows), 2)
    return LiveBeam(torch.arange(a), scores, tokens, prev, rows)


def expansions(scores, tokens, ends, length: int = 2) -> Expansions:
    scores = torch.tensor(scores, dtype=torch.float64)
    token = torch.tensor(tokens)
    sequences = token.unsqueeze(-1).expand(-1, -1, length)
    parent = torch.zeros_like(token)
    return Expansions(scores, parent, token, torch.tensor(ends), sequences)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"beam_size": 0}, "beam size must be at least 1"),
        ({"nbest": 3}, "nbest must be between 1 and the beam size"),
        ({"stopping": "soon"}, "unknown stopping 'soon'"),
        ({"penalty": "linear"}, "linear"),
    ],
)
def test_settings_refuse_what_no_beam_can_do(options, message):
    with pytest.raises(ValueError, match=message):
        settings(alpha=1.0, **options)


def test_refill_ranks_twice_the_beam():
    assert settings(alpha=1.0).width == 2
    assert settings(alpha=1.0, refill=True).width == 4


def test_lengths_hold_the_penalty_of_every_length_up_to_the_longest_limit():
    lengths = lengths_of([2, 4], alpha=0.5)
    assert lengths.steps == 4
    assert lengths.divisor(3) == float(length_penalty(torch.tensor(3), 0.5))
    assert lengths.best_possible.tolist() == [2**0.5, 2.0]


def test_the_first_step_expands_each_sentences_one_row():
    """Before the first step a sentence has one state row (slot 0): its
    best tokens are the k best expansions."""
    start = LiveBeam.start(1, 2, bos_id=2, device=torch.device("cpu"))
    log_probs = torch.log(torch.tensor([[0.0, 0.1, 0.0, 0.2, 0.7]]))
    best = best_expansions(start, log_probs, settings(alpha=1.0), lengths_of([3]), None)
    assert best.token.tolist() == [[4, 3]]
    assert best.ends.tolist() == [[False, True]]  # <eos>
    assert best.sequences.tolist() == [[[4], [3]]]
    assert best.scores[0].tolist() == pytest.approx([math.log(0.7), math.log(0.2)])


def test_expansions_add_each_prefixs_score_and_end_at_the_limit():
    live = beam([[-1.0, -2.0]], [[5], [6]])
    log_probs = torch.log(torch.tensor([[0.0, 0.0, 0.0, 0.5, 0.5], [0.0] * 4 + [1.0]]))
    best = best_expansions(live, log_probs, settings(alpha=1.0), lengths_of([2]), None)
    assert best.scores.tolist() == [pytest.approx([-1 + math.log(0.5)] * 2)]
    assert best.parent.tolist() == [[0, 0]]
    assert best.ends.all()  # the length limit, 2
    assert best.sequences[0].tolist() in ([[5, 3], [5, 4]], [[5, 4], [5, 3]])


def test_ended_expansions_among_the_k_best_are_finished():
    done = FinishedCandidates.empty(1, 2, 2, EOS, torch.device("cpu"))
    stuck = FinishedCandidates.empty(1, 2, 2, EOS, torch.device("cpu"))
    best = expansions(
        [[-1.0, -2.0, -3.0, -4.0]], [[EOS, 4, EOS, 5]], [[True, False, True, True]]
    )
    refill = settings(alpha=1.0, refill=True)
    finish(best, torch.tensor([0]), refill, lengths_of([2]), done, stuck)
    # the third ended too, but is not among the k = 2 best
    assert done.rank.tolist() == [[-1.0 / 2, INF]]  # L = 2 with <eos>
    assert done.score[0, 0] == -1.0
    assert done.length[0, 0] == 1  # the tokens before <eos>
    assert not stuck.rank.isfinite().any()


def test_an_ended_expansion_with_a_phrase_unmet_is_incomplete():
    done = FinishedCandidates.empty(1, 2, 2, EOS, torch.device("cpu"))
    stuck = FinishedCandidates.empty(1, 2, 2, EOS, torch.device("cpu"))
    best = expansions([[-1.0, -2.0]], [[EOS, EOS]], [[True, True]])
    best = Expansions(**(vars(best) | {"unmet": torch.tensor([[True, False]])}))
    finish(best, torch.tensor([0]), settings(alpha=1.0), lengths_of([2]), done, stuck)
    assert done.rank.tolist() == [[-1.0, INF]] and done.score[0, 0] == -2.0
    assert stuck.rank.tolist() == [[-0.5, INF]] and stuck.score[0, 0] == -1.0


def test_refill_keeps_the_k_best_that_do_not_end_in_their_order():
    best = expansions(
        [[-1.0, -2.0, -3.0, -4.0]], [[EOS, 4, 5, 6]], [[True, False, False, False]]
    )
    kept = best.refilled(2)
    assert kept.token.tolist() == [[4, 5]]
    assert kept.scores.tolist() == [[-2.0, -3.0]]
    assert kept.sequences[0, :, 0].tolist() == [4, 5]


def test_the_live_beam_leaves_ended_slots_empty():
    best = expansions([[-1.0, -2.0]], [[EOS, 4]], [[True, False]])
    live = best.live(beam([[0.0, INF]], [[], []], rows=1))
    assert live.scores.tolist() == [[INF, -2.0]]
    assert live.rows == 2 and live.last_tokens().tolist() == [EOS, 4]


def test_prefixes_the_controls_leave_no_token_end_where_they_stand():
    live = beam([[-1.0, INF], [-2.0, -3.0]], [[4], [5], [6], [7]])
    no_token = torch.tensor([True, True, False, True])  # per state row
    rank, scores, tokens, lengths, _ = live.ended_where(no_token, divisor=2.0)
    # sentence 0's second slot is empty: no candidate there
    assert rank.tolist() == [[-0.5, INF], [INF, -1.5]]
    assert lengths.tolist() == [[1, 1], [1, 1]]
    assert tokens is live.tokens and scores is live.scores


def test_before_the_first_step_every_slot_continues_the_one_state_row():
    first = beam([[0.0, INF], [0.0, INF]], [[], [], [], []], rows=1)
    parent = torch.tensor([[1, 0], [0, 1]])
    assert first.state_rows(parent).tolist() == [[0, 0], [1, 1]]
    later = beam([[0.0, 0.0], [0.0, 0.0]], [[4], [5], [6], [7]], rows=2)
    assert later.state_rows(parent).tolist() == [[1, 0], [2, 3]]


def test_keep_drops_the_sentences_that_stopped():
    live = beam([[-1.0, -2.0], [-3.0, -4.0]], [[4], [5], [6], [7]])
    kept = live.keep(torch.tensor([1]))
    assert kept.active.tolist() == [1]
    assert kept.tokens.tolist() == [[[6], [7]]]
    assert kept.last_tokens().tolist() == [6, 7]


def test_attention_history_follows_each_expansions_parent():
    live = beam([[0.0, 0.0]], [[4], [5]])
    live = LiveBeam(**(vars(live) | {"attention": torch.tensor([[10.0], [20.0]])}))
    live = LiveBeam(**(vars(live) | {"attention": live.attention.view(1, 2, 1, 1)}))
    state = SimpleNamespace(attention=torch.tensor([[[1.0]], [[2.0]]]).view(2, 1, 1))
    history = attention_history(state, live, torch.tensor([[1, 1, 0]]))
    assert history.view(1, 3, 2).tolist() == [[[20.0, 2.0], [20.0, 2.0], [10.0, 1.0]]]
    with pytest.raises(ValueError, match="does not report attention"):
        attention_history(SimpleNamespace(attention=None), live, torch.tensor([[0]]))


@pytest.mark.parametrize(
    ("stopping", "expected"),
    [
        ("exact", [True, False]),
        ("k_finished", [False, True]),
        ("max_length", [False, False]),
    ],
)
def test_each_stopping_rule(stopping, expected):
    """Sentence 0 has one finished candidate that no live prefix can beat;
    sentence 1 has two (k) worse than its live prefix."""
    done = FinishedCandidates.empty(2, 2, 4, EOS, torch.device("cpu"))
    done.rank = torch.tensor([[-0.1, INF], [-5.0, -6.0]], dtype=torch.float64)
    live = beam([[-1.0, INF], [-1.0, -2.0]], [[4], [5], [6], [7]])
    options = settings(alpha=1.0, stopping=stopping)
    assert has_stopped(live, options, lengths_of([4, 4]), done).tolist() == expected
    # at the limit, or with no live prefix, a sentence stops whatever the rule
    assert has_stopped(live, options, lengths_of([1, 4]), done).tolist()[0]
    empty = beam([[INF, INF], [-1.0, -2.0]], [[4], [5], [6], [7]])
    assert has_stopped(empty, options, lengths_of([4, 4]), done).tolist()[0]
