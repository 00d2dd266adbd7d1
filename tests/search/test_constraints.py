"""Constraints per sentence (``rosetta.search.constraints``): a prefix,
phrases to include and phrases to exclude, against a brute-force check
(every output of a tiny vocabulary, scored by teacher forcing, kept only if
it meets its sentence's constraints read plainly)."""

from __future__ import annotations

import random

import pytest
import torch

from rosetta.data.vocab import BOS_ID, EOS_ID
from rosetta.search.bans import Spellings
from rosetta.search.beam import beam_search
from rosetta.search.constraints import BatchConstraints, TokenConstraints
from rosetta.search.exhaustive import exhaustive_search
from rosetta.search.greedy import greedy_search
from tests.search.test_controls import LIMIT, MODELS, VOCAB, WORDS
from tests.search.test_controls import best_by_brute_force as brute_force

MODEL = MODELS[0.0]


def plainly_met(tokens: list[int], constraints: TokenConstraints) -> bool:
    """The constraints read plainly on a whole output."""
    if tokens[: len(constraints.prefix)] != list(constraints.prefix):
        return False
    glue = constraints.continuations  # may not follow a phrase: it stays a word
    for phrase in constraints.include:
        size = len(phrase)
        if not any(
            tuple(tokens[i : i + size]) == phrase
            and (i + size == len(tokens) or tokens[i + size] not in glue)
            for i in range(len(tokens))
        ):
            return False
    for phrase in constraints.exclude:
        for start in range(len(tokens)):
            for end in range(start + 1, len(tokens) + 1):
                if phrase.spells(tokens[start:end]):
                    return False
    return True


def best_by_brute_force(src, constraints: TokenConstraints):
    """The best output of the tiny vocabulary that meets ``constraints``."""
    return brute_force(
        MODEL, src, lambda tokens, _: plainly_met(tokens, constraints), 1.0
    )


def search_batch(src, constraints, beam_size: int, **extra):
    mask = torch.ones_like(src, dtype=torch.bool)
    batch = BatchConstraints(constraints, EOS_ID, src.device)
    return beam_search(
        MODEL,
        src,
        mask,
        bos_id=BOS_ID,
        eos_id=EOS_ID,
        beam_size=beam_size,
        alpha=1.0,
        max_len_a=0,
        max_len_b=LIMIT,
        constraints=batch,
        **extra,
    )


TWO_WAYS = Spellings(3, ((0, 6, 3), (0, 5, 1), (1, 5, 3), (1, 4, 2), (2, 4, 3)))
KINDS = [
    TokenConstraints(),
    TokenConstraints(include=((7,),)),
    TokenConstraints(include=((5, 7),)),
    TokenConstraints(include=((4,), (6,))),
    TokenConstraints(include=((6, 6),)),  # a phrase that overlaps itself
    # 7 and 4 go on with the word before them: after the phrase, neither
    TokenConstraints(include=((5,),), continuations=frozenset({7, 4})),
    TokenConstraints(prefix=(7,)),
    TokenConstraints(prefix=(4, 4)),
    TokenConstraints(exclude=(Spellings.of_tokens((6,)), Spellings.of_tokens((5,)))),
    TokenConstraints(exclude=(TWO_WAYS,)),
    TokenConstraints(
        include=((5,),), prefix=(7,), exclude=(Spellings.of_tokens((6,)),)
    ),
]


def sources(n: int, seed: int) -> torch.Tensor:
    return torch.randint(
        4, VOCAB, (n, 4), generator=torch.Generator().manual_seed(seed)
    )


@pytest.mark.reference
def test_a_wide_beam_finds_each_sentences_best_output_under_its_own_constraints():
    """One batch, a different constraint per sentence; a beam as wide as
    every prefix is exact here and equals the brute force for each."""
    src = sources(len(KINDS), seed=3)
    found = search_batch(src, KINDS, beam_size=200)
    changed = 0
    for row, (constraints, [best]) in enumerate(zip(KINDS, found, strict=True)):
        assert best.complete and plainly_met(best.tokens, constraints), constraints
        assert best.tokens == best_by_brute_force(src[row : row + 1], constraints)
        [[free]] = search_batch(src[row : row + 1], [TokenConstraints()], 200)
        changed += free.tokens != best.tokens
    assert changed >= 5  # the constraints changed what the search found


@pytest.mark.reference
def test_exhaustive_search_with_constraints_equals_the_brute_force():
    src = sources(len(KINDS), seed=4)
    mask = torch.ones_like(src, dtype=torch.bool)
    found = exhaustive_search(
        MODEL,
        src,
        mask,
        bos_id=BOS_ID,
        eos_id=EOS_ID,
        alpha=1.0,
        max_len_a=0,
        max_len_b=LIMIT,
        constraints=KINDS,
    )
    for row, (constraints, [best]) in enumerate(zip(KINDS, found, strict=True)):
        assert best.tokens == best_by_brute_force(src[row : row + 1], constraints)


@pytest.mark.parametrize("beam_size", [2, 4])
@pytest.mark.parametrize("refill", [False, True])
def test_a_narrow_beam_meets_every_include_phrase(beam_size, refill):
    """Dynamic beam allocation: with a beam of 2 or 4, every sentence's
    phrases are met (they fit its output limit), whatever the model prefers."""
    rng = random.Random(7)
    kinds = []
    for _ in range(24):
        phrases = tuple(
            tuple(rng.choice(WORDS[1:]) for _ in range(rng.randint(1, 2)))
            for _ in range(rng.randint(1, 2))
        )
        kinds.append(TokenConstraints(include=phrases))
    for shared in (((5, 6), (5, 7)), ((4, 5, 6), (4, 7)), ((7, 4, 4), (7, 5))):
        kinds.append(TokenConstraints(include=shared))  # one first token, twice
    found = search_batch(sources(len(kinds), 5), kinds, beam_size, refill=refill)
    for constraints, [best] in zip(kinds, found, strict=True):
        assert best.complete and plainly_met(best.tokens, constraints), (
            constraints,
            best,
        )


def test_an_include_that_cannot_fit_is_an_incomplete_hypothesis():
    """Phrases longer than the positions allow: the search stops at the
    limit and says so, never an output passed off as meeting them."""
    kinds = [TokenConstraints(include=((4, 5, 6, 7),))]
    mask = torch.ones((1, 4), dtype=torch.bool)
    batch = BatchConstraints(kinds, EOS_ID, mask.device)
    [[best]] = beam_search(
        MODEL,
        sources(1, 6),
        mask,
        bos_id=BOS_ID,
        eos_id=EOS_ID,
        beam_size=3,
        alpha=1.0,
        max_len_a=0,
        max_len_b=LIMIT,
        max_len_cap=3,
        constraints=batch,
    )
    assert not best.complete and len(best.tokens) == 3


@pytest.mark.reference
def test_greedy_search_takes_the_likeliest_token_the_constraints_allow():
    kinds = [k for k in KINDS if not k.include]
    src = sources(len(kinds), seed=8)
    mask = torch.ones_like(src, dtype=torch.bool)
    batch = BatchConstraints(kinds, EOS_ID, src.device)
    found = greedy_search(
        MODEL,
        src,
        mask,
        bos_id=BOS_ID,
        eos_id=EOS_ID,
        max_len_a=0,
        max_len_b=LIMIT,
        constraints=batch,
    )
    for row, (constraints, hypothesis) in enumerate(zip(kinds, found, strict=True)):
        tokens: list[int] = []
        for _ in range(LIMIT):
            tgt_in = torch.tensor([[BOS_ID, *tokens]])
            with torch.no_grad():
                logits = MODEL.output_proj(MODEL(src[row : row + 1], mask[:1], tgt_in))
            order = logits[0, -1].argsort(descending=True).tolist()
            prefix = constraints.prefix
            token = next(
                t
                for t in order
                if (
                    t in WORDS
                    and (len(tokens) >= len(prefix) or t == prefix[len(tokens)])
                    and plainly_met(
                        [*tokens, t], TokenConstraints(exclude=constraints.exclude)
                    )
                )
                or (t == EOS_ID and len(tokens) >= len(prefix))
            )
            if token == EOS_ID:
                break
            tokens.append(token)
        assert hypothesis.tokens == tokens, constraints


def test_greedy_search_refuses_phrases_to_include():
    kinds = [TokenConstraints(include=((5,),))]
    mask = torch.ones((1, 4), dtype=torch.bool)
    with pytest.raises(ValueError, match="need beam search"):
        greedy_search(
            MODEL,
            sources(1, 1),
            mask,
            bos_id=BOS_ID,
            eos_id=EOS_ID,
            max_len_a=0,
            max_len_b=LIMIT,
            constraints=BatchConstraints(kinds, EOS_ID, mask.device),
        )


@pytest.mark.reference
def test_the_matching_automaton_counts_what_plain_matching_counts():
    """After any output, a phrase's count is the longest start of it the
    output ends with, or all of it once it appeared."""
    rng = random.Random(1)
    for _ in range(200):
        phrase = tuple(rng.choice((4, 5)) for _ in range(rng.randint(1, 4)))
        tokens = [rng.choice((4, 5, 6)) for _ in range(rng.randint(0, 8))]
        batch = BatchConstraints(
            [TokenConstraints(include=(phrase,))], EOS_ID, torch.device("cpu")
        )
        matched = batch.start(torch.tensor([0]))
        for token in tokens:
            matched = batch.advance(matched, torch.tensor([token]), torch.tensor([0]))
        seen = any(
            tuple(tokens[i : i + len(phrase)]) == phrase for i in range(len(tokens))
        )
        expected = (
            len(phrase)
            if seen
            else max(
                k
                for k in range(len(phrase))
                if k == 0 or tuple(tokens[-k:]) == phrase[:k]
            )
        )
        assert int(matched[0, 0]) == expected, (phrase, tokens)
