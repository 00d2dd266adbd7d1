"""``model`` with ``arch: transformer-xl`` (``task: lm``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from rosetta.config import attention_keys
from rosetta.config.language_model_section import LanguageModelSection


class TransformerXLConfig(LanguageModelSection):
    """``arch: transformer-xl``: a decoder-only Transformer language model
    (``task: lm``) that reads a long text in segments, each attending to the
    hidden states the previous segments left in its memory (the reading keys
    are every language model's: ``LanguageModelSection``)."""

    arch: Literal["transformer-xl"] = Field(description="the model family")
    heads: int = attention_keys.heads(6)
    d_ff: int = attention_keys.d_ff(1536)
    dropout: float = Field(0.1, ge=0.0, lt=1.0, description="dropout probability")
    attention_dropout: float = attention_keys.attention_dropout()
    norm: Literal["post", "pre"] = attention_keys.norm("pre")

    @model_validator(mode="after")
    def _heads_divide_width(self) -> TransformerXLConfig:
        attention_keys.check_heads_divide_width(self.d_model, self.heads)
        return self
