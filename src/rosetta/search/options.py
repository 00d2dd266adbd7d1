"""The search options shared by the API, the CLI and the server.

One dataclass names every choice; ``rosetta.search.dispatch.search`` picks
the algorithm from it. This module imports no PyTorch (the search code is
imported where an option is checked or used), so that the command line's
help, which shows the defaults, answers at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, get_args

from rosetta.config.sections import DecodeConfig
from rosetta.data.vocab import EOS_ID
from rosetta.runtime import limits
from rosetta.runtime.limits import check

if TYPE_CHECKING:
    from rosetta.search.bans import Spellings
    from rosetta.search.controls import Controls

LengthPenalty = Literal["power", "gnmt"]
Stopping = Literal["exact", "k_finished", "max_length"]


def check_penalty(kind: str) -> None:
    if kind not in get_args(LengthPenalty):
        raise ValueError(f"unknown length penalty {kind!r}: use 'power' or 'gnmt'")


# Every number of the options, and what it may be (``rosetta.runtime.limits``).
KINDS = {
    "beam_size": limits.Count,
    "alpha": limits.NonNegative,
    "nbest": limits.Count,
    "max_len_a": limits.LengthRatio | None,
    "max_len_b": limits.LengthOffset | None,
    "temperature": limits.Temperature,
    "top_k": limits.Size,
    "top_p": limits.Probability,
    "seed": limits.Seed | None,
    "min_length": limits.Size,
    "no_repeat_ngram": limits.Size,
}
MAX_BANNED = 100  # phrases per search
MAX_PHRASE_CHARS = 200  # characters per banned phrase


def check_phrases(phrases: Sequence[str], what: str = "banned phrase") -> None:
    """``ValueError`` unless ``phrases`` are at most ``MAX_BANNED`` texts,
    none blank, longer than ``MAX_PHRASE_CHARS`` or holding a lone surrogate
    (which is no text: it has no UTF-8); ``what`` names one in the message."""
    if isinstance(phrases, str):
        raise ValueError(f"{what}s: a list of phrases, not one string")
    if len(phrases) > MAX_BANNED:
        raise ValueError(f"{len(phrases)} {what}s; at most {MAX_BANNED}")
    for number, phrase in enumerate(phrases, start=1):
        if not isinstance(phrase, str):
            raise ValueError(f"{what} {number} is not text: {phrase!r}")
        if not phrase.strip():
            article = "an" if what[0] in "aeiou" else "a"
            raise ValueError(f"{article} {what} is empty")
        if len(phrase) > MAX_PHRASE_CHARS:
            raise ValueError(
                f"{what} {number} has {len(phrase)} characters; at most "
                f"{MAX_PHRASE_CHARS}"
            )
        try:
            phrase.encode("utf-8")
        except UnicodeEncodeError as error:
            raise ValueError(
                f"{what} {number}: a lone surrogate at character "
                f"{error.start} is not text"
            ) from None


@dataclass(frozen=True)
class SearchOptions:
    """How to decode: the one place that sets the search defaults, which the
    Python API, the CLI and the server read. The default is greedy search.

    ``max_len_a`` and ``max_len_b`` (the output limit ``a·S + b``) left unset
    take the model's configured ``decode.max_len_a`` and ``decode.max_len_b``.
    """

    beam_size: int = 1
    alpha: float = 0.75  # length normalisation (1 / L^α) Σ log P
    penalty: LengthPenalty = "power"  # or "gnmt": ((5 + L) / 6)^α
    stopping: Stopping = "exact"
    refill: bool = False  # keep k live prefixes (fairseq/HF/CT2) or the k best
    nbest: int = 1
    max_len_a: float | None = None  # output limit a·S + b
    max_len_b: int | None = None
    sample: bool = False
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None  # sampling: reproducible draws
    need_attention: bool = False
    min_length: int = 0  # no <eos> before this many tokens
    no_repeat_ngram: int = 0  # no n-gram twice in an output (0: off)
    ban: tuple[str, ...] = ()  # phrases no output holds, as text, in any casing
    ban_forms: bool = False  # and every word that starts with a phrase's last
    # ``ban`` as the target side spells them (a translator sets them); a
    # sequence of token ids stands for itself
    banned: tuple[Spellings, ...] = ()

    def __post_init__(self) -> None:
        for name, kind in KINDS.items():
            check(kind, getattr(self, name), name)
        if not 1 <= self.nbest <= self.beam_size:
            raise ValueError(
                f"nbest ({self.nbest}) must be between 1 and the beam size "
                f"({self.beam_size}): set beam_size to at least {self.nbest}"
            )
        if self.max_len_a == 0 and self.max_len_b == 0:
            raise ValueError(
                "an output limit of 0 tokens (max_len_a 0, max_len_b 0) leaves "
                "no room for a translation"
            )
        # the search code, imported here: it validates what only it knows
        from rosetta.search.controls import as_spellings
        from rosetta.search.sampling import sampler

        check_penalty(self.penalty)
        if self.sample:
            if self.beam_size > 1 or self.nbest > 1:
                raise ValueError("sampling draws one translation: use beam size 1")
            if self.need_attention:
                raise ValueError("attention weights come with greedy or beam search")
            sampler(self.temperature, self.top_k, self.top_p)  # validates them
        check_phrases(self.ban)
        # tuples, so that equal options hash alike (the server groups by them)
        object.__setattr__(self, "ban", tuple(self.ban))
        object.__setattr__(self, "banned", as_spellings(self.banned))

    def controls(self, eos_id: int) -> Controls:
        """What the search rules out (``rosetta.search.controls``)."""
        from rosetta.search.controls import Controls

        if self.ban and not self.banned:
            raise ValueError("banned phrases need a translator to tokenize them")
        return Controls(self.min_length, self.no_repeat_ngram, self.banned, eos_id)

    def check_meetable(
        self,
        limits: Mapping[int, int],
        vocabulary: int | None = None,
        eos_id: int = EOS_ID,
    ) -> None:
        """``ValueError`` where the minimum length cannot be met: beyond the
        output limit of an input (``limits``: by input line, from 1), or
        beyond the longest output the controls allow over ``vocabulary``
        tokens (``Controls.longest_output``). What cannot be known before
        the search ends a hypothesis short, marked incomplete."""
        if not self.min_length:
            return
        for line, limit in limits.items():
            if self.min_length > limit:
                raise ValueError(
                    f"minimum length {self.min_length} is beyond the output "
                    f"limit of input line {line}: {limit} tokens "
                    "(max_len_a·S + max_len_b, at most the model's positions)"
                )
        if vocabulary is None:
            return
        longest = self.controls(eos_id).longest_output(vocabulary)
        if longest is not None and self.min_length > longest:
            raise ValueError(
                f"minimum length {self.min_length} is beyond the longest output "
                f"the controls allow: {longest} tokens (no n-gram of "
                f"{self.no_repeat_ngram} twice, {len(self.ban)} banned phrases, "
                f"{vocabulary} tokens in the vocabulary)"
            )

    def with_length_limit(self, decode: DecodeConfig) -> SearchOptions:
        """These options with an unset length limit taken from ``decode``."""
        return replace(
            self,
            max_len_a=decode.max_len_a if self.max_len_a is None else self.max_len_a,
            max_len_b=decode.max_len_b if self.max_len_b is None else self.max_len_b,
        )

    @property
    def uses_beam(self) -> bool:
        return not self.sample and (
            self.beam_size > 1 or self.nbest > 1 or self.need_attention
        )
