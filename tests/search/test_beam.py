"""Beam and exhaustive search on a fake model whose distributions are set by hand."""

import math
import random

import pytest
import torch

from rosetta.search import (
    beam_search,
    exhaustive_search,
    greedy_search,
    normalized_score,
)
from rosetta.search.options import SearchOptions
from tests.support.fakes import BOS, EOS, TableModel, random_table, sequences_of

TOKENS = [4, 5, 6]
VOCAB = 8


def sources(n, length=3):
    """Sentence i is ``[i, 7, 7]``: its first token picks its table."""
    src = torch.full((n, length), 7)
    src[:, 0] = torch.arange(n)
    return src, torch.ones(n, length, dtype=torch.bool)


LIMIT = {"max_len_a": 0.0, "max_len_b": 6}  # room for the trees' depth + <eos>
SEARCH = {"alpha": SearchOptions.alpha, **LIMIT}


def search(model, n, **options):
    options = SEARCH | options
    return beam_search(model, *sources(n), bos_id=BOS, eos_id=EOS, **options)


def exhaustive(model, n, **options):
    options = SEARCH | options
    return exhaustive_search(model, *sources(n), bos_id=BOS, eos_id=EOS, **options)


def random_tables(seed, count, depth=3):
    rng = random.Random(seed)
    return [random_table(rng, TOKENS, depth) for _ in range(count)]


@pytest.mark.reference
@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize(
    ("alpha", "penalty"), [(0.75, "power"), (0.0, "power"), (1.0, "gnmt")]
)
def test_a_beam_wide_enough_returns_the_exhaustive_best(seed, alpha, penalty):
    tables = random_tables(seed, count=3)
    model = TableModel(tables, VOCAB)
    k = max(sequences_of(t, 3) for t in tables)
    options = dict(alpha=alpha, penalty=penalty)
    beams = search(model, 3, beam_size=k, nbest=k, **options)
    truth = exhaustive(model, 3, nbest=k, **options)
    for i in range(3):
        assert beams[i][0].tokens == truth[i][0].tokens
        assert beams[i][0].score == pytest.approx(truth[i][0].score, abs=1e-9)
        # with room for every sequence the whole n-best list is exact
        assert [h.tokens for h in beams[i]] == [h.tokens for h in truth[i]]


@pytest.mark.reference
@pytest.mark.parametrize("k", [1, 2, 3])
def test_each_step_keeps_exactly_the_k_best_expansions(k):
    tables = random_tables(seed=7, count=2, depth=4)
    model = TableModel(tables, VOCAB)
    search(model, 2, beam_size=k, stopping="max_length")
    # replay the search by hand from the recorded calls
    live = {0: [((), 0.0)], 1: [((), 0.0)]}
    for call in model.calls[1:]:
        expected = {}
        for sentence, prefixes in live.items():
            table = tables[sentence]
            expansions = [
                ((*p, tok), score + math.log(prob))
                for p, score in prefixes
                for tok, prob in table.get(p, {EOS: 1.0}).items()
            ]
            expansions.sort(key=lambda e: -e[1])
            best = expansions[:k]
            expected[sentence] = [(p, s) for p, s in best if p[-1] != EOS]
        # rows of ended or impossible prefixes are carried with score -inf
        seen: dict[int, set] = {}
        for sentence, prefix in call:
            seen.setdefault(sentence, set())
            if EOS not in prefix and prob_of(tables[sentence], prefix) > 0:
                seen[sentence].add(prefix)
        for sentence, prefixes in expected.items():
            if prefixes:
                assert seen[sentence] == {p for p, _ in prefixes}
                assert sum(1 for s, _ in call if s == sentence) == k  # one tensor
        live = {s: p for s, p in expected.items() if p}


@pytest.mark.parametrize("refill", [False, True])
def test_the_first_step_decodes_one_row_per_sentence(refill):
    """Before the first step a sentence's k beams all hold <bos>: one row each
    is decoded, and the state is widened to k rows per sentence after it."""
    tables = random_tables(seed=3, count=3, depth=4)
    model = TableModel(tables, VOCAB)
    search(model, 3, beam_size=3, stopping="max_length", refill=refill)
    assert model.calls[0] == [(0, ()), (1, ()), (2, ())]
    assert [sentence for sentence, _ in model.calls[1]] == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def prob_of(table, prefix):
    prob = 1.0
    for i, token in enumerate(prefix):
        prob *= table.get(prefix[:i], {EOS: 1.0}).get(token, 0.0)
    return prob


SHORT_OR_LONG = {
    (): {4: 0.5, 5: 0.5},
    (4,): {EOS: 0.6, 6: 0.4},  # [4] <eos>: P = 0.30, L = 2
    (5,): {6: 0.7, EOS: 0.3},
    (5, 6): {7: 0.7, EOS: 0.3},
    (5, 6, 7): {EOS: 0.7, 4: 0.3},  # [5 6 7] <eos>: P = 0.1715, L = 4
}


@pytest.mark.reference
def test_length_normalisation_changes_the_choice_where_it_should():
    model = TableModel(SHORT_OR_LONG, VOCAB)
    short, long = [4], [5, 6, 7]
    short_lp, long_lp = model.log_prob([*short, EOS]), model.log_prob([*long, EOS])
    assert short_lp > long_lp  # the short one is more likely ...
    assert short_lp / 2**0.75 < long_lp / 4**0.75  # ... but not per token
    for find in (search, exhaustive):
        unnormalized = find(
            model, 1, alpha=0.0, **({"beam_size": 4} if find is search else {})
        )
        normalized = find(
            model, 1, alpha=0.75, **({"beam_size": 4} if find is search else {})
        )
        assert unnormalized[0][0].tokens == short
        assert normalized[0][0].tokens == long
        assert normalized[0][0].normalized_score == pytest.approx(long_lp / 4**0.75)


@pytest.mark.reference
@pytest.mark.parametrize("seed", range(6))
def test_nbest_lists_are_sorted_and_scores_are_the_sums_of_log_probs(seed):
    tables = random_tables(seed, count=2, depth=4)
    model = TableModel(tables, VOCAB)
    for sentence, hypotheses in enumerate(search(model, 2, beam_size=4, nbest=4)):
        ranks = [h.normalized_score for h in hypotheses]
        assert ranks == sorted(ranks, reverse=True)
        for h in hypotheses:
            recomputed = model.log_prob([*h.tokens, EOS], sentence)
            assert h.score == pytest.approx(recomputed, abs=1e-6)  # float32 model
            assert h.normalized_score == pytest.approx(
                normalized_score(recomputed, len(h.tokens) + 1, 0.75)
            )


@pytest.mark.reference
@pytest.mark.parametrize("seed", range(10))
def test_exact_stopping_never_changes_the_result(seed):
    """Stopping early by the bound gives what decoding to the end gives."""
    tables = random_tables(seed, count=3, depth=5)
    for k in (1, 2, 3):
        for alpha in (0.0, 0.75, 2.0):
            results = [
                search(
                    TableModel(tables, VOCAB),
                    3,
                    beam_size=k,
                    alpha=alpha,
                    stopping=stopping,
                    nbest=1,
                )
                for stopping in ("exact", "max_length")
            ]
            for a, b in zip(*results, strict=True):
                assert a[0].tokens == b[0].tokens


def test_k_finished_stops_once_k_candidates_have_finished():
    table = {
        (): {4: 0.5, EOS: 0.5},
        **{(4,) * n: {4: 0.5, EOS: 0.5} for n in range(1, 30)},
    }
    model = TableModel(table, VOCAB)
    [hyps] = search(model, 1, beam_size=2, stopping="k_finished", nbest=2)
    assert len(model.calls) == 2  # <eos> at step 1, [4] <eos> at step 2
    assert [h.tokens for h in hyps] == [[], [4]] or [h.tokens for h in hyps] == [
        [4],
        [],
    ]


@pytest.mark.reference
@pytest.mark.parametrize("seed", range(8))
def test_beam_of_one_is_greedy(seed):
    tables = random_tables(seed, count=3, depth=5)
    model = TableModel(tables, VOCAB)
    greedy = greedy_search(model, *sources(3), bos_id=BOS, eos_id=EOS, **LIMIT)
    for alpha in (0.0, 0.75):
        beams = search(model, 3, beam_size=1, alpha=alpha)
        for g, [b] in zip(greedy, beams, strict=True):
            assert b.tokens == g.tokens
            assert b.score == g.score


def test_maximum_length_ends_every_beam():
    looping = TableModel({(4,) * n: {4: 0.9, 5: 0.1} for n in range(40)}, VOCAB)
    src, mask = sources(2, length=4)
    mask[1, 2:] = False
    hyps = beam_search(
        looping,
        src,
        mask,
        bos_id=BOS,
        eos_id=EOS,
        beam_size=3,
        alpha=0.75,
        max_len_a=1.0,
        max_len_b=1,
        nbest=3,
    )
    # limits a·S + b: 1·4 + 1 = 5 and 1·2 + 1 = 3 (then [4 4 5] <eos> etc.)
    assert hyps[0][0].tokens == [4] * 5
    assert hyps[1][0].tokens == [4] * 3
    assert max(len(h.tokens) for h in hyps[0]) == 5
    assert max(len(h.tokens) for h in hyps[1]) == 3


def test_exhaustive_refuses_a_search_space_too_large():
    model = TableModel({}, VOCAB)
    with pytest.raises(ValueError, match=r"V\^T' = 8\^14 sequences"):
        exhaustive(model, 1, max_len_b=14)


def test_bad_options_are_refused():
    model = TableModel({}, VOCAB)
    with pytest.raises(ValueError, match="nbest must be between 1 and the beam size"):
        search(model, 1, beam_size=2, nbest=3)
    with pytest.raises(ValueError, match="unknown length penalty"):
        search(model, 1, beam_size=2, penalty="wu")
    with pytest.raises(ValueError, match="unknown stopping"):
        search(model, 1, beam_size=2, stopping="early")


def refill_beam_by_hand(table, k, alpha, limit, nbest):
    """The beam of fairseq / Hugging Face / CTranslate2, one sentence, in lists:
    rank the 2k best expansions; those that end are finished if among the k
    best; the k best that do not end live on; stop once k have finished."""
    live, finished = [((), 0.0)], []
    for t in range(limit):
        expansions = sorted(
            (
                ((*prefix, token), score + math.log(prob))
                for prefix, score in live
                for token, prob in table.get(prefix, {EOS: 1.0}).items()
            ),
            key=lambda e: -e[1],
        )[: 2 * k]
        live = []
        for rank, (prefix, score) in enumerate(expansions):
            if prefix[-1] == EOS or t + 1 >= limit:
                if rank < k:
                    finished.append((prefix, score, score / len(prefix) ** alpha))
            elif len(live) < k:
                live.append((prefix, score))
        if len(finished) >= k or not live:
            break
    finished.sort(key=lambda f: -f[2])
    return [([x for x in p if x != EOS], s) for p, s, _ in finished[:nbest]]


@pytest.mark.reference
@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("k", [1, 2, 3])
def test_refill_equals_the_refilling_beam_written_by_hand(seed, k):
    tables = random_tables(seed, count=3, depth=5)
    model = TableModel(tables, VOCAB)
    found = search(model, 3, beam_size=k, nbest=k, refill=True, stopping="k_finished")
    for i, table in enumerate(tables):
        expected = refill_beam_by_hand(table, k, 0.75, LIMIT["max_len_b"], k)
        assert [h.tokens for h in found[i]] == [tokens for tokens, _ in expected]
        for h, (_, score) in zip(found[i], expected, strict=True):
            assert h.score == pytest.approx(score, abs=1e-6)  # float32 model


@pytest.mark.reference
@pytest.mark.parametrize("seed", range(6))
def test_refill_with_a_wide_beam_is_exact_too(seed):
    tables = random_tables(seed, count=3)
    model = TableModel(tables, VOCAB)
    k = max(sequences_of(t, 3) for t in tables)
    beams = search(model, 3, beam_size=k, nbest=k, refill=True)
    truth = exhaustive(model, 3, nbest=k)
    for i in range(3):
        assert [h.tokens for h in beams[i]] == [h.tokens for h in truth[i]]


def test_refill_keeps_searching_where_the_narrowing_beam_stops():
    """k = 1: [4] <eos> is the best expansion at step 2, which leaves the textbook
    beam empty; the refilling beam goes on with [4 6], whose end [4 6 7] <eos>
    scores better per token."""
    table = {
        (): {4: 0.6, 5: 0.4},
        (4,): {EOS: 0.6, 6: 0.4},  # [4] <eos>: P = 0.36, L = 2
        (4, 6): {7: 0.95, EOS: 0.05},
        (4, 6, 7): {EOS: 0.95, 5: 0.05},  # [4 6 7] <eos>: P = 0.2166, L = 4
    }
    model = TableModel(table, VOCAB)
    assert search(model, 1, beam_size=1, nbest=1)[0][0].tokens == [4]
    refilled = search(model, 1, beam_size=1, refill=True, stopping="exact")
    assert refilled[0][0].tokens == [4, 6, 7]
