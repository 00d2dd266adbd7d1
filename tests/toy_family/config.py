"""``model`` with ``arch: toy``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rosetta.config.sections import EncoderDecoderSection


class ToyConfig(EncoderDecoderSection):
    """``arch: toy``: one embedding per side and one attention."""

    arch: Literal["toy"] = Field(description="the model family")
