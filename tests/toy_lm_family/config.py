"""``model`` with ``arch: toy-lm``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rosetta.config.language_model_section import LanguageModelSection


class ToyLMConfig(LanguageModelSection):
    """``arch: toy-lm``: stacked GRU layers; a memory of one position per
    layer (its last hidden state), none with ``memory_length: 0``."""

    arch: Literal["toy-lm"] = Field(description="the model family")
