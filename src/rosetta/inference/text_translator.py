"""What every translator shares, whatever engine runs the model: text in and
out, the source length limit, search options, and the ``Translation`` record.

``Translator`` (``rosetta.inference.translator``) decodes with the PyTorch model;
``CTranslate2Translator`` (``rosetta.families.transformer.ctranslate2.engine``) with a
CTranslate2 export of it. Both implement ``translate_ids``.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, TypedDict, Unpack

import torch

from rosetta.data.tokenizer import TokenizerPair
from rosetta.errors import RosettaError
from rosetta.inference.alignment import add_alignments
from rosetta.inference.bans import PhraseSpeller
from rosetta.inference.constraints import (
    Constraint,
    as_constraints,
    spell_constraints,
)
from rosetta.inference.languages import LanguageChoice, without_language_token
from rosetta.inference.translation import Translation
from rosetta.runtime.resources import refuse_beyond_memory
from rosetta.search.batched import Workers
from rosetta.search.beam import normalized_score
from rosetta.search.constraints import TokenConstraints
from rosetta.search.greedy import Hypothesis, max_lengths
from rosetta.search.options import SearchOptions

if TYPE_CHECKING:
    from rosetta.config.schema import Config


Sources = list[list[int]]  # token ids per sentence, none for a blank line
Progress = Callable[[int], object]  # told how many more sentences are done
Found = list[list["Translation"]]  # an n-best list per sentence


class Batching(TypedDict, total=False):
    """The keywords of ``TextTranslator.translate`` (``translate_nbest``'s
    too): ``batch_size`` sentences a batch (default: the run's); ``workers``
    > 1 decodes that many batches at once on the CPU, sharing torch's
    threads among them, ``"auto"`` one per thread where that applies
    (``auto_workers``); ``constraints``, one per sentence (``Constraint``,
    or a dict of its fields ``include``, ``exclude``, ``prefix``; None for
    none); ``progress``, called with the number of sentences each decoded
    batch finished (a progress bar's ``update``)."""

    batch_size: int | None
    workers: Workers
    constraints: Iterable[Constraint | dict | None] | None
    progress: Progress | None


@dataclass(frozen=True)
class DecodeRequest:
    """What an engine decodes (``TextTranslator.decode_ids``): ``sources``
    with complete ``options``, ``size`` sentences a batch, on ``workers``,
    each under its ``constraints`` (if any); the engine tells ``progress``
    (if any) how many sentences each batch finished (``done``)."""

    sources: Sources
    options: SearchOptions
    size: int
    workers: Workers
    constraints: list[TokenConstraints] | None = None
    progress: Progress | None = None

    def done(self, sentences: int) -> None:
        if self.progress is not None:
            self.progress(sentences)


class TextTranslator(LanguageChoice, ABC):
    """Translates text with a trained model and its tokenizers.

    Attributes:
        tokenizers, config: the model's, as trained.
        device: where it runs. precision: what it computes in.
    """

    engine: str  # what runs the model: "rosetta", "ctranslate2"
    one_pass = False  # every target token at once (no beam, no sampling)
    decodes_in_workers = False  # ``workers`` > 1 decodes batches side by side
    tokenizers: TokenizerPair
    config: Config
    device: torch.device
    precision: str

    @property
    @abstractmethod
    def parameter_count(self) -> int:
        """How many weights the model has."""

    @property
    def position_limit(self) -> int | None:
        """The longest sequence the model can encode or decode, if any."""
        return self.config.model.position_limit

    def rescored_by(self, teacher: TextTranslator, samples: int) -> TextTranslator:
        """This model drawing ``samples`` candidates per sentence, of which
        ``teacher`` keeps the one it scores best (noisy parallel decoding):
        what a one-pass model offers instead of beam search."""
        raise RosettaError(
            "noisy parallel decoding (--npd, --teacher) is for one-pass models "
            "(arch nat)"
        )

    def encode(self, sentence: str, source_language: str | None = None) -> list[int]:
        """Source token ids of ``sentence`` (without ``<eos>``), cut to what the
        model takes, with a warning; a blank line gives none. A multilingual
        model's sentences start with a language's token (``LanguageChoice``;
        ``source_language``: this sentence's, if not the one chosen)."""
        start: list[int] = []
        if sentence.strip():
            start = self.language_ids(source_language)
            sentence = self.tagged_text(sentence)
        limits = {"decode.max_input_tokens": self.config.decode.max_input_tokens}
        if self.position_limit is not None:
            limits["model.max_positions"] = self.position_limit
        setting, limit = min(limits.items(), key=lambda item: item[1])
        ids = start + self.tokenizers.src.encode(sentence) if sentence.strip() else []
        if len(ids) + 1 > limit:  # + 1 for <eos>
            warnings.warn(
                f"input of {len(ids)} tokens truncated to {limit - 1} ({setting})",
                stacklevel=2,
            )
            ids = ids[: limit - 1]
        return ids

    def check_search(self, options: SearchOptions) -> None:
        """``RosettaError`` for a search this translator cannot run exactly
        (a family or engine refuses what it cannot honour); none here."""
        return None

    def check_constraints(
        self, constraints: list[Constraint], options: SearchOptions
    ) -> None:
        """``RosettaError`` for constraints this translator cannot honour
        with ``options``: phrases to include need beam search."""
        if any(c.include for c in constraints) and not options.uses_beam:
            raise RosettaError(
                "phrases to include need beam search: use a beam of 2 or more (--beam)"
            )

    @cached_property
    def speller(self) -> PhraseSpeller:
        """Spells banned phrases in the target vocabulary, made on first use."""
        return PhraseSpeller(self.tokenizers.tgt)

    def complete(self, options: SearchOptions | None = None) -> SearchOptions:
        """``options`` (default: greedy search) with an unset length limit
        taken from the model's configuration and banned phrases spelled in
        the target vocabulary; ``RosettaError`` for a search this translator
        refuses (``check_search``)."""
        options = (options or SearchOptions()).with_length_limit(self.config.decode)
        self.check_search(options)
        if options.ban and not options.banned:  # every way the target writes them
            spelled = tuple(
                self.speller.spellings(p, options.ban_forms) for p in options.ban
            )
            options = replace(options, banned=spelled)
        return options

    def check_meetable(self, sources: Sources, options: SearchOptions) -> None:
        """``RosettaError`` where the minimum length of complete ``options``
        cannot be met for a non-empty source (``SearchOptions.check_meetable``,
        against each source's own output limit)."""
        if not options.min_length:
            return
        lines = [i for i, ids in enumerate(sources, start=1) if ids]
        lengths = torch.tensor([len(sources[i - 1]) + 1 for i in lines])  # <eos>
        limits = max_lengths(
            lengths,
            options.max_len_a,  # type: ignore[arg-type]
            options.max_len_b,  # type: ignore[arg-type]
            self.position_limit,
        )
        try:
            options.check_meetable(
                dict(zip(lines, limits.tolist(), strict=True)),
                len(self.tokenizers.tgt),
            )
        except ValueError as error:
            raise RosettaError(str(error)) from None

    def translate(
        self,
        sentences: Iterable[str],
        options: SearchOptions | None = None,
        **batching: Unpack[Batching],
    ) -> list[str]:
        """Translate sentences; one output per input, in order (empty in, empty out).

        ``options`` says how to search (``SearchOptions``; default: greedy,
        with the model's configured length limit). ``batching``: the keywords
        ``batch_size``, ``workers`` and ``constraints`` (``Batching``).
        """
        results = self.translate_nbest(sentences, options, **batching)
        return [found[0].text if found else "" for found in results]

    def translate_nbest(
        self,
        sentences: Iterable[str],
        options: SearchOptions | None = None,
        *,
        batch_size: int | None = None,
        workers: Workers = 1,
        constraints: Iterable[Constraint | dict | None] | None = None,
        alignment: bool = False,
        progress: Progress | None = None,
    ) -> list[list[Translation]]:
        """Per input, its n-best list of ``Translation`` (empty for a blank
        line); ``options`` as for ``translate``, the keywords as ``Batching``
        says, and ``alignment``: each translation's word alignment
        (``rosetta.inference.alignment``)."""
        sentences = list(sentences)
        sources = [self.encode(sentence) for sentence in sentences]
        return self.translate_ids(
            sources,
            options,
            batch_size=batch_size,
            workers=workers,
            constraints=constraints,
            alignment=alignment,
            texts=sentences,
            progress=progress,
        )

    def translate_ids(
        self,
        sources: list[list[int]],
        options: SearchOptions | None = None,
        *,
        batch_size: int | None = None,
        workers: Workers = 1,
        constraints: Iterable[Constraint | dict | None] | None = None,
        alignment: bool = False,
        texts: list[str] | None = None,
        target_languages: Sequence[str | None] | None = None,
        progress: Progress | None = None,
    ) -> list[list[Translation]]:
        """``translate_nbest`` of sentences already encoded (``encode``): one
        n-best list per id list, none for an empty one (a blank line);
        ``texts``: the sentences, whose words alignments name;
        ``target_languages``: each sentence's, for a model that tags its
        outputs (default: the one chosen)."""
        size = batch_size or self.config.decode.batch_size
        options = self.complete(options)
        asked_attention = options.need_attention
        if alignment:  # read off the attention, returned only if asked for
            options = replace(options, need_attention=True)
        self.check_meetable(sources, options)
        if not isinstance(constraints, list | tuple | str | bytes | Mapping | None):
            constraints = list(constraints)  # any other iterable, once
        wanted = as_constraints(constraints, len(sources))
        tokens = None
        if wanted is not None:
            self.check_constraints(wanted, options)
            tokens = spell_constraints(
                wanted, sources, self.tokenizers.tgt, self.speller, self.position_limit
            )
        # each step scores every word for every hypothesis of the batch, and
        # keeps a few such tables (scores, their top choices, their sum)
        rows = min(size, max(len(sources), 1)) * options.beam_size
        refuse_beyond_memory(
            16 * rows * len(self.tokenizers.tgt),
            f"a search of {rows:,} hypotheses at once (beam {options.beam_size})",
        )
        forced = self.forced_starts(len(sources), tokens, target_languages)
        request = DecodeRequest(sources, options, size, workers, forced, progress)
        request.done(sum(not ids for ids in sources))  # blank lines: nothing to do
        found = self.decode_ids(request)
        if forced is not tokens:  # the target-language token, forced
            for translation in (t for ts in found for t in ts):
                without_language_token(translation)
        if alignment:
            skip = 1 if self.target_languages else 0  # the language token
            add_alignments(found, sources, self.tokenizers, skip, texts)
            for translation in (t for ts in found for t in ts):
                if not asked_attention:
                    translation.attention = None
        for number, translations in enumerate(found if tokens is not None else []):
            written = wanted[number].written_prefix(self.tokenizers.tgt)
            for translation in translations:  # the tokens, and the text
                translation.constraints_met = tokens[number].met_by(
                    translation.token_ids
                ) and wanted[number].prefix_kept(translation.text, written)
        return found

    @abstractmethod
    def decode_ids(self, request: DecodeRequest) -> Found:
        """``translate_ids`` for ``request``: what each engine does its own
        way."""

    def _translation(
        self, hypothesis: Hypothesis, source_pieces: list[str], options: SearchOptions
    ) -> Translation:
        text = self.tokenizers.tgt.decode(hypothesis.tokens)
        normalized = hypothesis.normalized_score
        if normalized is None:  # greedy search and sampling rank nothing
            length = hypothesis.scored_length()
            normalized = normalized_score(
                hypothesis.score, length, options.alpha, options.penalty
            )
        return Translation(
            text=" ".join(text.split()),  # one line, whatever it holds
            score=hypothesis.score,
            normalized_score=normalized,
            token_ids=hypothesis.tokens,
            tokens=self.tokenizers.tgt.id_pieces(hypothesis.tokens),
            source_tokens=source_pieces,
            attention=hypothesis.attention,
            complete=hypothesis.complete,
        )
