"""What a translator knows of a multilingual model's languages, and how it
tells the model which to use.

Two kinds of model translate between several languages:

- a MarianMT model with target-language tokens (``>>fra<<``): each source
  sentence starts with the target language's token, as text;
- a model that tags both sides (NLLB-200, M2M100, mBART-50; the
  tokenizer's ``languages``): the source starts with its own language's
  token (``deu_Latn``) and the output's first token is forced to the
  target language's (``fra_Latn``), scored 0 as ``transformers``' forced
  first token is; the output's text leaves it out.

The languages are chosen once (``for_language``, ``from_language``) or, for
the second kind, per sentence (the server's per-request languages). Where
the run's configuration names two of the model's codes (``data.src_lang``,
``data.tgt_lang``: a model fine-tuned on one pair), they are the defaults.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Self

from rosetta.errors import RosettaError
from rosetta.inference.language_codes import language_of, name_of, resolve_code
from rosetta.inference.translation import Translation
from rosetta.search.constraints import TokenConstraints

if TYPE_CHECKING:
    from rosetta.config.schema import Config
    from rosetta.data.tokenizer import TokenizerPair
    from rosetta.runs.corpus_languages import CorpusLanguages

UNNAMED = ("src", "tgt")  # data.src_lang and tgt_lang of a run that names none


class LanguageChoice:
    """The languages part of ``TextTranslator``."""

    tokenizers: TokenizerPair
    config: Config
    target_language: str | None = None  # chosen (``for_language``)
    source_language: str | None = None  # chosen (``from_language``)
    # what the run's prepare identified of its training corpus, if anything
    corpus_languages: CorpusLanguages | None = None

    @property
    def tags_both_sides(self) -> bool:
        """Whether the model tags its source and its output with their
        languages (NLLB-200, M2M100, mBART-50)."""
        return bool(getattr(self.tokenizers.src, "tags_both_sides", False))

    @property
    def target_languages(self) -> list[str]:
        """The codes of the languages the model translates into; empty for a
        model of one target language."""
        return list(getattr(self.tokenizers.src, "language_codes", []))

    @property
    def source_languages(self) -> list[str]:
        """The codes of the languages the model is told it reads (a model
        that tags both sides); empty for every other model."""
        return self.target_languages if self.tags_both_sides else []

    def for_language(self, code: str) -> Self:
        """This translator, translating into ``code`` (as ``resolved``)."""
        chosen = copy.copy(self)
        chosen.target_language = self.resolved(code, "target")
        return chosen

    def from_language(self, code: str) -> Self:
        """This translator, reading sentences of the language ``code`` (as
        ``resolved``)."""
        chosen = copy.copy(self)
        chosen.source_language = self.resolved(code, "source")
        return chosen

    def resolved(self, code: str, side: str) -> str:
        """The model's code of its ``side`` ("source", "target") languages
        that ``code`` stands for: itself, or the one code of the same
        language (``de``, ``deu``, ``de_DE``, ``German`` for ``deu_Latn``;
        ``language_codes.resolve_code``). A model of one language pair
        takes its own (``data.src_lang``, ``data.tgt_lang``). Else a
        ``RosettaError`` that names the closest codes."""
        codes = self.source_languages if side == "source" else self.target_languages
        if not isinstance(code, str):
            raise RosettaError(f"{side} language {code!r}: a language code, as text")
        if codes:
            try:
                return resolve_code(code, codes, side)
            except ValueError as error:
                raise RosettaError(str(error)) from None
        key = "src_lang" if side == "source" else "tgt_lang"
        own = getattr(self.config.data, key, None)
        if own in UNNAMED:  # the configuration's stand-ins name no language
            own = None
        if own and language_of(code) == language_of(own):
            return own
        if own:
            does = "reads" if side == "source" else "translates into"
            raise RosettaError(
                f"{side} language {code!r}: the model {does} {own} only "
                f"(data.{key}); leave out --{side}-lang"
            )
        told = {
            "target": "the model translates into one language",
            "source": "the model is not told the language it reads",
        }
        raise RosettaError(
            f"{side} language {code!r}: {told[side]}; leave out --{side}-lang"
        )

    def _chosen(self, side: str) -> str | None:
        chosen = self.source_language if side == "source" else self.target_language
        if chosen is not None or not self.tags_both_sides:
            return chosen
        key = "src_lang" if side == "source" else "tgt_lang"
        configured = getattr(self.config.data, key, None)
        return configured if configured in self.target_languages else None

    @property
    def chosen_target(self) -> str | None:
        """The target language chosen, or configured, if any."""
        return self._chosen("target")

    @property
    def chosen_source(self) -> str | None:
        """The source language chosen, or configured, if any."""
        return self._chosen("source")

    @property
    def expected_source(self) -> str | None:
        """The language input should be in, for the source-language check:
        the one chosen or configured (``chosen_source``), else
        ``data.src_lang`` where the run names one, else the one its
        training corpus was found to be in (``corpus_languages``); None
        where nothing tells."""
        chosen = self.chosen_source
        if chosen is not None:
            return chosen
        if self.config.data.src_lang not in UNNAMED:
            return self.config.data.src_lang
        found = self.corpus_languages
        return found.source.language if found is not None else None

    def language_label(self, side: str) -> str:
        """The ``side``'s language as a reader names it: "German (deu_Latn)"
        for the code chosen or configured, "any of 202 languages" for a
        multilingual model's unchosen side, the configured code otherwise."""
        codes = self.source_languages if side == "source" else self.target_languages
        key = "src_lang" if side == "source" else "tgt_lang"
        code = self._chosen(side) if codes else getattr(self.config.data, key)
        if code is None or (codes and code not in codes):
            return f"any of {len(codes)} languages"
        name = name_of(code)
        return f"{name} ({code})" if name else code

    def check_language_chosen(self) -> None:
        """``RosettaError`` if the model needs languages and one is neither
        chosen nor configured."""
        sides = ["source", "target"] if self.tags_both_sides else ["target"]
        for side in sides if self.target_languages else []:
            if self._chosen(side) is None:
                codes = self.target_languages
                shown = ", ".join(codes[:3]) + (", ..." if len(codes) > 3 else "")
                raise RosettaError(
                    f"the model translates between several languages: choose "
                    f"the {side} language with --{side}-lang: one of its "
                    f"{len(codes)} codes ({shown}; rosetta languages -m MODEL "
                    "lists them), or a language as people write it (de, German)"
                )

    def language_ids(self, source: str | None = None) -> list[int]:
        """The ids a source sentence starts with: its language's token
        (``source``, default the chosen one), for a model that tags both
        sides; none for other models."""
        if not self.tags_both_sides:
            if source is not None:
                self.resolved(source, "source")  # refused, saying why
            return []
        code = source if source is not None else self._chosen("source")
        if code is None:
            self.check_language_chosen()
        code = self.resolved(code, "source")  # type: ignore[arg-type]
        return [self.tokenizers.src.language_id(code)]  # type: ignore[attr-defined]

    def tagged_text(self, sentence: str) -> str:
        """``sentence`` with a MarianMT model's ``>>code<<`` in front."""
        if self.target_languages and not self.tags_both_sides:
            self.check_language_chosen()
            return f">>{self.target_language}<< {sentence}"
        return sentence

    def forced_starts(
        self,
        count: int,
        constraints: list[TokenConstraints] | None,
        targets: Sequence[str | None] | None,
    ) -> list[TokenConstraints] | None:
        """``constraints`` of ``count`` sentences with each output's first
        token forced to its target language (``targets``, default the chosen
        one), scored 0; as they are for a model that does not tag outputs."""
        if isinstance(targets, str):
            raise RosettaError("target_languages: one code per sentence, not a string")
        if not self.tags_both_sides:
            if targets is not None and any(code is not None for code in targets):
                raise RosettaError(
                    "target_languages: the model is told no target language per "
                    "sentence (for_language chooses a MarianMT model's)"
                )
            return constraints
        if targets is not None and len(targets) != count:
            raise RosettaError(
                f"target_languages: {len(targets)} codes for {count} sentences"
            )
        codes = list(targets or [None] * count)
        base = constraints or [TokenConstraints()] * count
        forced = []
        for code, constraint in zip(codes, base, strict=True):
            code = code if code is not None else self._chosen("target")
            if code is None:
                self.check_language_chosen()
            code = self.resolved(code, "target")  # type: ignore[arg-type]
            token = self.tokenizers.tgt.language_id(code)  # type: ignore[attr-defined]
            forced.append(
                replace(
                    constraint,
                    prefix=(token, *constraint.prefix),
                    free=constraint.free + 1,
                )
            )
        return forced


def without_language_token(translation: Translation) -> None:
    """``translation`` less its first token (the forced target language),
    in place: its text already leaves it out."""
    translation.token_ids = translation.token_ids[1:]
    translation.tokens = translation.tokens[1:]
    if translation.attention is not None:
        translation.attention = translation.attention[1:]
