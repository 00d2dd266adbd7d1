"""``model`` with ``arch: nat``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rosetta.families.transformer.config import AttentionSection


class NATConfig(AttentionSection):
    """``arch: nat``: the non-autoregressive Transformer, which predicts a
    fertility for every source token and then all target tokens at once."""

    arch: Literal["nat"] = Field(description="the model family")
    max_fertility: int = Field(
        8, gt=0, description="largest fertility (target tokens per source token)"
    )
    decoder_input: Literal["fertility", "uniform"] = Field(
        "fertility",
        description="decoder input: each source embedding copied as often as its "
        "fertility, or spread evenly over the target length (the fertilities "
        "then only give the length)",
    )
    fertility_weight: float = Field(
        1.0, ge=0.0, description="weight of the fertility loss beside the target's"
    )
