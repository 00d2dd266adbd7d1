"""The HTTP API's JSON: requests, answers and the server's limits."""

from __future__ import annotations

import difflib
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    field_validator,
)

from rosetta.inference.constraints import Constraint
from rosetta.runtime.limits import (
    Count,
    LengthOffset,
    LengthRatio,
    NonNegative,
    Probability,
    Seed,
    Size,
    Temperature,
)
from rosetta.search.options import (
    MAX_BANNED,
    LengthPenalty,
    SearchOptions,
    Stopping,
    check_phrases,
)

DEFAULT = SearchOptions()


class ConstraintFields(BaseModel):
    """What one translation must hold, must not hold and starts with."""

    model_config = ConfigDict(extra="forbid")

    include: list[str] = Field([], max_length=MAX_BANNED)
    exclude: list[str] = Field([], max_length=MAX_BANNED)
    prefix: str = ""

    def constraint(self) -> Constraint:
        """As the translator takes it; ``ValueError`` for a phrase that is
        not text (validated once, in ``Constraint``)."""
        return Constraint(tuple(self.include), tuple(self.exclude), self.prefix)


class TranslateRequest(BaseModel):
    """Sentences and how to search; the fields mirror ``rosetta translate``."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"sentences": ["Ein Hund läuft im Schnee."], "beam_size": 5}]
        },
    )

    sentences: list[str] = Field(..., min_length=1, description="one per line")
    source_lang: str | None = Field(
        None,
        max_length=64,
        description="a multilingual model's language code for the sentences "
        "(NLLB-200 deu_Latn, M2M100 de, mBART-50 de_DE); default: the server's",
    )
    target_lang: str | None = Field(
        None,
        max_length=64,
        description="the language code to translate into; default: the server's",
    )
    beam_size: Count = Field(
        DEFAULT.beam_size,
        validation_alias=AliasChoices("beam_size", "beam"),
        description="1: greedy search (also beam, as rosetta translate --beam)",
    )
    nbest: Count = Field(
        DEFAULT.nbest, description="hypotheses per sentence (≤ beam_size)"
    )
    alpha: NonNegative = Field(
        DEFAULT.alpha, description="length normalisation exponent"
    )
    penalty: LengthPenalty = DEFAULT.penalty
    stopping: Stopping = DEFAULT.stopping
    refill: StrictBool = Field(
        DEFAULT.refill, description="keep beam_size live prefixes"
    )
    max_len_a: LengthRatio | None = Field(
        None, description="limit a·S + b (default: the model's)"
    )
    max_len_b: LengthOffset | None = None
    sample: StrictBool = DEFAULT.sample
    temperature: Temperature = DEFAULT.temperature
    top_k: Size = DEFAULT.top_k
    top_p: Probability = DEFAULT.top_p
    seed: Seed | None = None
    min_length: Size = Field(
        DEFAULT.min_length,
        validation_alias=AliasChoices("min_length", "min_len"),
        description="no translation ends before this many tokens (also min_len, "
        "as rosetta translate --min-len)",
    )
    no_repeat_ngram: Size = Field(
        DEFAULT.no_repeat_ngram, description="no n-gram twice in a translation"
    )
    ban: list[str] = Field(
        [],
        max_length=MAX_BANNED,
        description="words or phrases no translation holds, in any casing "
        "and any spelling of the target vocabulary",
    )
    ban_forms: StrictBool = Field(
        DEFAULT.ban_forms,
        description="ban also every word that starts with a phrase's last word",
    )
    attention: StrictBool = Field(False, description="return cross-attention weights")
    alignment: StrictBool = Field(
        False,
        description="return word alignments, Pharaoh i-j (source word i, "
        "target word j, from 0, words split on spaces)",
    )
    constraints: list[ConstraintFields | None] | None = Field(
        None,
        description="one per sentence (null or {} for none): phrases the "
        "translation must include or exclude, and text it starts with; "
        "include needs beam_size 2 or more",
    )

    @field_validator("sentences")
    @classmethod
    def _encodable(cls, sentences: list[str]) -> list[str]:
        for number, sentence in enumerate(sentences):
            try:
                sentence.encode("utf-8")
            except UnicodeEncodeError as error:
                raise ValueError(
                    f"sentence {number}: a lone surrogate at character "
                    f"{error.start} is not text"
                ) from None
        return sentences

    @field_validator("ban")
    @classmethod
    def _phrases(cls, phrases: list[str]) -> list[str]:
        check_phrases(phrases)
        return phrases

    def search_options(self) -> SearchOptions:
        """The search this request asks for; ``ValueError`` if inconsistent."""
        options = self.model_dump(
            exclude={
                "sentences",
                "attention",
                "ban",
                "constraints",
                "alignment",
                "source_lang",
                "target_lang",
            }
        )
        return SearchOptions(
            **options, ban=tuple(self.ban), need_attention=self.attention
        )


class Hypothesis(BaseModel):
    text: str
    score: float = Field(description="Σ log P, <eos> included when produced")
    normalized_score: float = Field(
        description="score / L^α (or the gnmt penalty): what beam search ranks by"
    )
    complete: bool = Field(
        True,
        description="false: the controls (min_length, no_repeat_ngram, ban) "
        "left no token to go on with, so the translation stops short",
    )
    constraints_met: bool | None = Field(
        None,
        description="with constraints: whether this translation meets them "
        "(starts with the prefix, holds every phrase to include and none to "
        "exclude)",
    )
    alignment: str | None = Field(
        None, description="with alignment: word links i-j, source i to target j"
    )
    token_ids: list[int]
    tokens: list[str]
    source_tokens: list[str]
    attention: list[list[list[list[float]]]] | None = Field(
        None, description="(target token, layer, head, source token)"
    )
    fertilities: list[int] | None = Field(
        None,
        description="a non-autoregressive model's: target tokens per source token",
    )


class SentenceResult(BaseModel):
    source: str
    detected_language: str | None = Field(
        None,
        description="the language the source looks like, where that is not "
        "the model's source language (rosetta serve --no-language-check: never)",
    )
    hypotheses: list[Hypothesis] = Field(description="best first; empty: blank line")


class TranslateResponse(BaseModel):
    translations: list[SentenceResult]
    elapsed_ms: float


class Health(BaseModel):
    status: Literal["ok"]


class Info(BaseModel):
    model: str
    engine: str = Field(description="rosetta or ctranslate2")
    arch: str
    one_pass: bool  # every target token at once: no beam, no n-best
    src_lang: str
    tgt_lang: str
    src_label: str = Field(description="the source language as a reader names it")
    tgt_label: str = Field(description="the target language as a reader names it")
    languages: dict[str, Any] = Field(
        description="a multilingual model's codes: source, target (empty "
        "lists otherwise) and the defaults, source_default, target_default"
    )
    parameters: int
    vocabulary: dict[str, int]
    device: str
    precision: str
    config: dict[str, Any]
    limits: dict[str, Any]
    batching: dict[str, Any]


def request_error(error: dict[str, Any]) -> dict[str, Any]:
    """One of a request's validation errors as the server answers it:
    FastAPI's shape without the input (it may be huge), and for a field the
    request does not have, the closest it has ("did you mean")."""
    said = {"loc": list(error["loc"]), "msg": error["msg"], "type": error["type"]}
    if error["type"] == "extra_forbidden" and error["loc"]:
        given = str(error["loc"][-1])
        known = [
            name
            for field_name, field in TranslateRequest.model_fields.items()
            for name in (
                field.validation_alias.choices
                if isinstance(field.validation_alias, AliasChoices)
                else [field_name]
            )
        ]
        named_twice = [
            [name for name in field.validation_alias.choices if name != given]
            for field in TranslateRequest.model_fields.values()
            if isinstance(field.validation_alias, AliasChoices)
            and given in field.validation_alias.choices
        ]
        close = difflib.get_close_matches(given, known, n=1, cutoff=0.6)
        if named_twice:  # the field's other name was sent too: it is no typo
            other = named_twice[0][0]
            said["msg"] = f"{given!r} and {other!r} name one setting: send one"
        elif close:
            said["msg"] += f"; did you mean {close[0]!r}?"
    return said
