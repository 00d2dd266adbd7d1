"""``model`` with ``arch: transformer-xl`` (``task: lm``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from rosetta.config import attention_keys
from rosetta.config.sections import ModelSection


class LanguageModelConfig(ModelSection):
    """``arch: transformer-xl``: a decoder-only Transformer language model
    (``task: lm``) that reads a long text in segments, each attending to the
    hidden states the previous segments left in its memory."""

    TASK = "lm"

    arch: Literal["transformer-xl"] = Field(description="the model family")
    layers: int = Field(6, gt=0, description="stacked decoder layers")
    d_model: int = Field(384, gt=0, description="model width")
    heads: int = attention_keys.heads(6)
    d_ff: int = attention_keys.d_ff(1536)
    dropout: float = Field(0.1, ge=0.0, lt=1.0, description="dropout probability")
    attention_dropout: float = attention_keys.attention_dropout()
    norm: Literal["post", "pre"] = attention_keys.norm("pre")
    segment_length: int = Field(
        256, gt=1, description="tokens read (and predicted) per segment"
    )
    memory_length: int = Field(
        256,
        ge=0,
        description="hidden states per layer kept from earlier segments and "
        "attended to; 0: every segment alone (a plain Transformer LM)",
    )
    eval_memory_length: int | None = Field(
        None,
        ge=0,
        description="memory when scoring and generating; null: memory_length",
    )
    eval_streams: int = Field(
        8,
        gt=0,
        description="validation reads the text as this many rows side by side, "
        "each warmed up on the text before it: the score of reading it in "
        "order, faster",
    )

    @model_validator(mode="after")
    def _heads_divide_width(self) -> LanguageModelConfig:
        attention_keys.check_heads_divide_width(self.d_model, self.heads)
        return self

    @property
    def scoring_memory(self) -> int:
        """The memory length evaluation uses."""
        if self.eval_memory_length is None:
            return self.memory_length
        return self.eval_memory_length
