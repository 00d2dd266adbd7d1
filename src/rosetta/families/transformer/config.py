"""``model`` with ``arch: transformer``, and the attention keys the
non-autoregressive Transformer shares."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from rosetta.config.sections import EncoderDecoderSection


class AttentionSection(EncoderDecoderSection):
    """What the attention-based encoder-decoders (``transformer``, ``nat``)
    read besides the common keys."""

    heads: int = Field(4, gt=0, description="attention heads; they divide d_model")
    d_ff: int = Field(1024, gt=0, description="inner width of the feed-forward layers")
    attention_dropout: float = Field(
        0.0, ge=0.0, lt=1.0, description="dropout on the attention weights"
    )
    norm: Literal["post", "pre"] = Field(
        "post",
        description="post: LayerNorm(x + sublayer(x)); pre: x + sublayer(LayerNorm(x))",
    )
    max_positions: int = Field(
        1024, gt=0, description="longest sequence the position table covers"
    )

    @model_validator(mode="after")
    def _heads_divide_width(self) -> AttentionSection:
        if self.d_model % self.heads:
            raise ValueError(
                f"heads ({self.heads}) must divide d_model ({self.d_model})"
            )
        return self

    @property
    def position_limit(self) -> int | None:
        return self.max_positions

    def layer_sizes(self) -> dict[str, Any]:
        """The keyword arguments of ``build_transformer`` but ``positions``:
        every key of the section but ``arch`` and ``norm`` (``norm_first``)."""
        sizes = self.model_dump(exclude={"arch", "norm", "positions"})
        return sizes | {"norm_first": self.norm == "pre"}


class TransformerConfig(AttentionSection):
    """``arch: transformer`` (the default)."""

    arch: Literal["transformer"] = Field(
        "transformer",
        description="the model family",
    )
    positions: Literal[
        "sinusoidal", "relative", "randomized", "shifted", "nope", "alibi"
    ] = Field(
        "sinusoidal",
        description="sinusoidal: absolute positions added to the embeddings; "
        "relative: self-attention scores distances (Transformer-XL); "
        "randomized: in training, sinusoids at random sorted positions up "
        "to max_positions; shifted: in training, at consecutive positions "
        "from a random start; nope: sinusoids in the encoder, none in the "
        "decoder; alibi: no sinusoids, every attention subtracts a learned "
        "slope times the distance (cross-attention from both ends of the source)",
    )
