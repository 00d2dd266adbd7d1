"""Banned phrases in every spelling of a subword vocabulary
(``rosetta.search.bans``, ``rosetta.inference.bans``): SentencePiece writes
"a" as "▁a" and as "▁" then "a", and a search kept from one reaches for the
other."""

from __future__ import annotations

import itertools
import random

import pytest
import torch

from rosetta.config.sections import TokenizerConfig
from rosetta.data.tokenizer import SentencePieceTokenizer, WordTokenizer
from rosetta.inference.bans import PhraseSpeller
from rosetta.search import beam_search, exhaustive_search, greedy_search
from rosetta.search.controls import Controls
from rosetta.search.sampling import sampler
from tests.search.test_controls import spellings
from tests.support.fakes import BOS, EOS, TableModel

WORDS = ["a", "dog", "cat", "the", "quick", "brown", "fox", "jumps", "over"]
WORDS += ["lazy", "an", "and", "at"]


@pytest.fixture(scope="module")
def pieces() -> SentencePieceTokenizer:
    """A SentencePiece vocabulary with every letter, "▁" alone and whole words."""
    rng = random.Random(0)
    lines = [" ".join(rng.choice(WORDS) for _ in range(8)) for _ in range(2000)]
    config = TokenizerConfig(kind="sentencepiece", vocab_size=60)
    return SentencePieceTokenizer.train(lines, config)


def by_decoding(
    tokenizer, phrase: str, most: int, any_case: bool = False
) -> set[tuple[int, ...]]:
    """Every sequence of at most ``most`` tokens that decodes, between two
    other words, as the phrase's own tokens do (``any_case``: compared in
    lower case): tried one by one (of the tokens whose pieces occur in the
    phrase's pieces, as no other can)."""
    fold = str.lower if any_case else str
    anchor = tokenizer.encode("fox")
    wanted = fold(tokenizer.decode([*anchor, *tokenizer.encode(phrase), *anchor]))
    written = fold("".join(tokenizer.pieces(phrase)))
    pieces = tokenizer.id_pieces(range(len(tokenizer)))
    inside = [i for i in range(4, len(tokenizer)) if fold(pieces[i]) in written]
    found = set()
    for length in range(1, most + 1):
        for tokens in itertools.product(inside, repeat=length):
            if fold(tokenizer.decode([*anchor, *tokens, *anchor])) == wanted:
                found.add(tokens)
    return found


@pytest.mark.reference
@pytest.mark.parametrize("phrase", ["a", "an", "at a"])
def test_a_phrase_has_every_spelling_that_decodes_to_it(pieces, phrase):
    spelled = PhraseSpeller(pieces).spellings(phrase)
    found = set(spellings(spelled))
    assert tuple(pieces.encode(phrase)) in found
    assert len(found) > 1  # "▁" then the letters, at least
    assert found == by_decoding(pieces, phrase, most=len(phrase) + 1)


def test_longer_words_are_other_phrases_unless_forms_are_asked_for(pieces):
    speller = PhraseSpeller(pieces)
    at = tuple(pieces.encode("at"))
    assert not any(speller.spellings("a").spells(s) for s in [at, at[:1] * 2])
    assert speller.spellings("a", forms=True).spells(at)
    assert speller.spellings("A").spells(tuple(pieces.encode("a")))  # no capitals


@pytest.fixture(scope="module")
def cased() -> SentencePieceTokenizer:
    """A vocabulary that writes "dog" in lower case, capitalised and in
    capitals, as whole words and in pieces."""
    rng = random.Random(1)
    words = [*WORDS, "Dog", "DOG", "Dogs", "dogs", "doggy", "The", "A"]
    lines = [" ".join(rng.choice(words) for _ in range(8)) for _ in range(3000)]
    config = TokenizerConfig(kind="sentencepiece", vocab_size=90)
    return SentencePieceTokenizer.train(lines, config)


@pytest.mark.reference
@pytest.mark.parametrize("phrase", ["dog", "Dog", "DOG"])
def test_a_phrase_is_banned_in_every_casing_the_vocabulary_writes(cased, phrase):
    spelled = PhraseSpeller(cased).spellings(phrase)
    found = set(spellings(spelled))
    for casing in ("dog", "Dog", "DOG"):
        assert tuple(cased.encode(casing)) in found, casing
    assert found == by_decoding(cased, "dog", most=4, any_case=True)
    assert tuple(cased.encode("dogs")) not in found


def test_forms_ban_every_word_that_starts_with_the_phrase(cased):
    speller = PhraseSpeller(cased)
    forms = speller.spellings("dog", forms=True)
    for word in ("dog", "Dogs", "dogs", "doggy", "DOG"):
        assert forms.spells(tuple(cased.encode(word))), word
    for other in ("do", "the", "a dog"):
        assert not forms.spells(tuple(cased.encode(other))), other


def test_a_word_vocabulary_spells_a_phrase_one_way():
    tokenizer = WordTokenizer.train(WORDS, TokenizerConfig(kind="word"))
    speller = PhraseSpeller(tokenizer)
    spelled = speller.spellings("The quick")
    assert spellings(spelled) == [tuple(tokenizer.encode("the quick"))]
    assert not speller.spellings("unseen").edges  # <unk>: never written


def test_every_search_avoids_every_spelling(pieces):
    """A model that prefers "▁" then "a", then "▁a": every search, free,
    writes the word "a"; with "a" banned, none does, in either spelling."""
    ids = {piece: i for i, piece in enumerate(pieces.id_pieces(range(len(pieces))))}
    space, a, word_a, dog = ids["▁"], ids["a"], ids["▁a"], ids["▁dog"]
    table = {
        (): {space: 0.5, word_a: 0.3, dog: 0.2},
        (space,): {a: 0.9, ids["d"]: 0.1},
        (space, ids["d"]): {ids["o"]: 1.0},
        (space, ids["d"], ids["o"]): {ids["g"]: 1.0},
    }
    model = TableModel(table, len(pieces))
    src, mask = torch.zeros(1, 2, dtype=torch.long), torch.ones(1, 2, dtype=torch.bool)
    common = {"bos_id": BOS, "eos_id": EOS, "max_len_a": 0.0, "max_len_b": 5}
    controls = Controls(banned=(PhraseSpeller(pieces).spellings("a"),), eos_id=EOS)
    searches = {
        "greedy": lambda c: [greedy_search(model, src, mask, controls=c, **common)],
        "sampling": lambda c: [
            greedy_search(
                model,
                src,
                mask,
                controls=c,
                choose=sampler(generator=torch.Generator().manual_seed(0)),
                **common,
            )
        ],
        "beam": lambda c: beam_search(
            model, src, mask, beam_size=3, alpha=1.0, controls=c, **common
        ),
        "refill n-best": lambda c: beam_search(
            model,
            src,
            mask,
            beam_size=3,
            nbest=2,
            refill=True,
            alpha=1.0,
            controls=c,
            **common,
        ),
        "exhaustive": lambda c: exhaustive_search(
            model,
            src,
            mask,
            alpha=1.0,
            nbest=2,
            controls=c,
            max_sequences=10**9,  # of probability zero, all but a few
            **common,
        ),
    }
    for name, run in searches.items():
        free = [pieces.decode(h.tokens).split() for h in run(Controls(eos_id=EOS))[0]]
        assert ["a"] in free, name
        found = run(controls)[0]
        assert found, name
        for hypothesis in found:
            assert "a" not in pieces.decode(hypothesis.tokens).split(), name
            assert hypothesis.complete, name
