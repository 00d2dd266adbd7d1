"""Banned phrases spelled in a target vocabulary (``rosetta.search.bans``).

What a token adds to a decoded output is read off the tokenizer itself: the
text that appears between two copies of an ordinary ``anchor`` token when
the three are decoded together (SentencePiece's "▁a" adds " a", a word
tokenizer's "a" adds " a", a character tokenizer's "a" adds "a"). A phrase
is written the same way, as its own tokens add it; every sequence of
tokens whose texts join to that text decodes to the phrase at the same
place, and ``spell`` finds them all. The tokenizer's normalisation (a word
tokenizer's lower case, SentencePiece's NFKC) applies to the phrase as it
does to any input; a phrase holding a word the vocabulary cannot write
(``<unk>``) can never appear in an output, so it bans nothing. Tokens that
write part of a character (byte pieces) are not among the spellings.

A phrase is banned in every casing the vocabulary can write ("dog" bans
"Dog" and "DOG" too): tokens are matched on their lower-case text. With
``forms``, every word that starts with the phrase's last word is banned as
well ("dog" bans "dogs" and "dog's", but also "dogma"): the last token of a
spelling may go on past the phrase with letters or digits.
"""

from __future__ import annotations

from collections import defaultdict
from functools import cached_property

from rosetta.data.tokenizer import Tokenizer
from rosetta.data.vocab import SPECIALS
from rosetta.search.bans import Spellings, spell


class PhraseSpeller:
    """Spells phrases in ``tokenizer``'s vocabulary; reading the texts of
    its tokens costs one decode per token, once."""

    def __init__(self, tokenizer: Tokenizer):
        self.tokenizer = tokenizer
        self.anchor = next(
            (
                token
                for token in range(len(SPECIALS), len(tokenizer))
                if self._plain(tokenizer.decode([token]))
            ),
            None,
        )
        if self.anchor is not None:  # what the anchors add on either side
            self.left = tokenizer.decode([self.anchor])
            self.right = tokenizer.decode([self.anchor] * 2)[len(self.left) :]
        self.tokens_of: dict[str, list[int]] = defaultdict(list)
        for token in range(len(SPECIALS), len(tokenizer)):
            text = self.text_of([token])
            if text:
                self.tokens_of[text].append(token)
        # by lower-case text, where lower case keeps the length (so that
        # positions along a phrase stay those of its lower-case text)
        self.tokens_of_any_case: dict[str, list[int]] = defaultdict(list)
        for text, tokens in self.tokens_of.items():
            if len(text.lower()) == len(text):
                self.tokens_of_any_case[text.lower()].extend(tokens)

    @staticmethod
    def _plain(text: str) -> bool:
        return bool(text) and not any(c.isspace() for c in text)

    def text_of(self, tokens: list[int]) -> str | None:
        """What ``tokens`` add to an output they stand inside of (None where
        the tokenizer does not decode them apart from their neighbours)."""
        if self.anchor is None:
            return None
        whole = self.tokenizer.decode([self.anchor, *tokens, self.anchor])
        if not (whole.startswith(self.left) and whole.endswith(self.right)):
            return None
        return whole[len(self.left) : len(whole) - len(self.right)]

    @cached_property
    def continuations(self) -> frozenset[int]:
        """The tokens that go on with the word before them: what they add
        starts with a letter or digit, no space before it ("s" after "dog")."""
        return frozenset(
            token
            for text, tokens in self.tokens_of.items()
            if text[:1].isalnum()
            for token in tokens
        )

    def spellings(self, phrase: str, forms: bool = False) -> Spellings:
        """Every token sequence that writes ``phrase``, in any casing, where
        it starts a word (for SentencePiece: after a space or at the start);
        with ``forms``, also every word that starts with its last word."""
        # as written, or in lower case where the vocabulary has no capitals
        for variant in dict.fromkeys([phrase, phrase.lower()]):
            tokens = self.tokenizer.encode(variant)
            if tokens and min(tokens) >= len(SPECIALS):
                break
        else:  # <unk> either way: never written
            return Spellings(0, ())
        text = self.text_of(tokens)
        found = None
        if text and len(text.lower()) == len(text):
            found = spell(text.lower(), self.tokens_of_any_case, forms)
        if found is None or not found.spells(tokens):  # decoding is not joining
            found = spell(text, self.tokens_of, forms) if text else None
        if found is None or not found.spells(tokens):
            return Spellings.of_tokens(tokens)
        return found
