"""``model`` with ``arch: nat``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from rosetta.families.transformer.config import AttentionSection

# what a NAT run's preparation writes beside its corpus
ALIGNMENTS_FILE = "alignments.txt"
FERTILITY_DIR = "fertilities"


def share(default: float | None, description: str) -> Any:
    """A field for a share from 0 to 1."""
    return Field(default, ge=0.0, le=1.0, description=description)


class NATConfig(AttentionSection):
    """``arch: nat``: the non-autoregressive Transformer, which decides the
    target's length (by fertilities, or by CTC over an upsampled source) and
    then predicts all target tokens at once."""

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
    positional_attention: bool = Field(
        True,
        description="a positional attention in every decoder layer (queries and "
        "keys the positions' sinusoids); false leaves it out, a quarter of the "
        "decoder's work",
    )
    length_model: Literal["fertility", "ctc"] = Field(
        "fertility",
        description="how the target's length is decided: fertilities predicted "
        "per source token (learnt from word alignments), or CTC over upsample "
        "copies of every source token, where blanks drop out",
    )
    upsample: int = Field(
        3, ge=1, le=16, description="ctc: decoder positions per source token"
    )
    glance_ratio: float = share(
        0.0,
        "glancing training: the share of a first pass's mistakes revealed as "
        "reference tokens in the decoder input of the second; 0 trains in one pass",
    )
    glance_ratio_end: float | None = share(
        None,
        "the ratio reached after glance_anneal_updates, linearly from "
        "glance_ratio (null: constant)",
    )
    glance_anneal_updates: int = Field(
        4000, gt=0, description="updates over which the glancing ratio anneals"
    )

    @model_validator(mode="after")
    def _ctc_has_no_fertilities(self) -> NATConfig:
        if self.length_model == "ctc" and self.decoder_input != "fertility":
            raise ValueError(
                "decoder_input chooses how fertilities copy the source; with "
                "length_model ctc the decoder reads upsample copies: remove it"
            )
        if self.glance_ratio_end is not None and self.glance_ratio == 0.0:
            raise ValueError(
                "glance_ratio_end anneals glancing: set glance_ratio above 0 too"
            )
        return self

    @property
    def position_limit(self) -> int | None:
        """A CTC model's decoder holds ``upsample`` positions per source token."""
        if self.length_model == "ctc":
            return self.max_positions // self.upsample
        return self.max_positions

    def glance_ratio_at(self, updates: int) -> float:
        """The glancing ratio after ``updates`` updates."""
        if self.glance_ratio_end is None:
            return self.glance_ratio
        done = min(updates / self.glance_anneal_updates, 1.0)
        return self.glance_ratio + (self.glance_ratio_end - self.glance_ratio) * done
