"""What a ``/translate`` request becomes: the translator for its languages,
its constraints checked, and the group of sentences (of any requests) that
one model call translates."""

from __future__ import annotations

from typing import Any, NamedTuple

from rosetta.errors import RosettaError
from rosetta.inference.constraints import Constraint, spell_constraints
from rosetta.inference.text_translator import TextTranslator
from rosetta.search.options import SearchOptions
from rosetta.serve.schemas import TranslateRequest


class GroupItem(NamedTuple):
    """One sentence of a request, as a model call takes it."""

    ids: list[int]
    constraint: Constraint | None  # None: its request asked for none
    text: str
    target: str | None  # its target language, for a model that tags outputs


def for_languages(
    translator: TextTranslator, request: TranslateRequest
) -> TextTranslator:
    """The translator for the request's ``source_lang`` and ``target_lang``
    (default: those chosen when the server started, or the run's);
    ``RosettaError`` for a code the model has not, or one left out that the
    model needs, naming the valid ones."""
    if request.ban or request.constraints:
        translator.speller  # noqa: B018  made once, then every copy shares it
    chosen = translator
    try:
        if request.source_lang is not None:
            chosen = chosen.from_language(request.source_lang)
        if request.target_lang is not None:
            chosen = chosen.for_language(request.target_lang)
        chosen.check_language_chosen()
    except RosettaError as error:  # named as the request names them
        said = str(error).replace("--source-lang", "source_lang")
        raise RosettaError(said.replace("--target-lang", "target_lang")) from None
    return chosen


def translate_group(
    translator: TextTranslator,
    sentences: list[GroupItem],
    asked: tuple[SearchOptions, bool],
) -> list[list[dict[str, Any]]]:
    """The worker thread's job: decode a group of encoded sentences, each
    with its constraints (None: its request had none) and target language,
    with ``asked``'s options and word alignments or not, and make its JSON."""
    options, alignment = asked
    sources = [item.ids for item in sentences]
    wanted = [item.constraint for item in sentences]
    targets = [item.target for item in sentences]
    constraints = None
    if any(constraint is not None for constraint in wanted):
        constraints = [constraint or Constraint() for constraint in wanted]
    results = translator.translate_ids(
        sources,
        options,
        constraints=constraints,
        alignment=alignment,
        texts=[item.text for item in sentences],
        target_languages=targets if any(targets) else None,
    )
    for found, constraint in zip(results, wanted, strict=True):
        for translation in found if constraint is None else ():
            translation.constraints_met = None  # its request asked for none
    return [[t.to_dict() for t in found] for found in results]


def request_constraints(
    translator: TextTranslator,
    request: TranslateRequest,
    sources: list[list[int]],
    options: SearchOptions,
) -> list[Constraint | None]:
    """The request's constraints, one per sentence, checked here so that a
    bad one is this request's 422 (``ValueError``, ``RosettaError``), never
    an error of the batch it would share."""
    if request.constraints is None:
        return [None] * len(sources)
    if len(request.constraints) != len(sources):
        raise ValueError(
            f"{len(request.constraints)} constraints for {len(sources)} "
            "sentences: give one per sentence (null or {} for none)"
        )
    wanted = [c.constraint() if c else Constraint() for c in request.constraints]
    translator.check_constraints(wanted, options)
    spell_constraints(
        wanted,
        sources,
        translator.tokenizers.tgt,
        translator.speller,
        translator.position_limit,
    )
    return list(wanted)
