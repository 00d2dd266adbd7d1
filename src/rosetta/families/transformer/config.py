"""``model`` with ``arch: transformer``, and the attention keys the
non-autoregressive Transformer shares."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from rosetta.config import attention_keys
from rosetta.config.sections import EncoderDecoderSection
from rosetta.families.transformer import positions

# a tiny attention model: the sizes of the Transformer's and the NAT's
# ``Family.example``
TINY_ATTENTION = {
    "encoder_layers": 1,
    "decoder_layers": 1,
    "d_model": 32,
    "heads": 2,
    "d_ff": 64,
    "share_embeddings": False,
    "max_positions": 64,
}


class AttentionSection(EncoderDecoderSection):
    """What the attention-based encoder-decoders (``transformer``, ``nat``)
    read besides the common keys."""

    heads: int = attention_keys.heads(4)
    d_ff: int = attention_keys.d_ff(1024)
    attention_dropout: float = attention_keys.attention_dropout()
    norm: Literal["post", "pre"] = attention_keys.norm("post")
    max_positions: int = Field(
        1024, gt=0, description="longest sequence the position table covers"
    )

    @model_validator(mode="after")
    def _heads_divide_width(self) -> AttentionSection:
        attention_keys.check_heads_divide_width(self.d_model, self.heads)
        return self

    @property
    def position_limit(self) -> int | None:
        return self.max_positions


class TransformerConfig(AttentionSection):
    """``arch: transformer`` (the default)."""

    arch: Literal["transformer"] = Field(
        "transformer",
        description="the model family",
    )
    positions: str = Field(
        "sinusoidal",
        description=positions.described(),
    )

    @field_validator("positions")
    @classmethod
    def _a_listed_scheme(cls, value: str) -> str:
        positions.listed(value)  # a ValueError naming the schemes
        return value

    number_offset: int = Field(
        100,
        ge=0,
        description="abacus, coupled: in training, digit positions move by an "
        "offset drawn per pair from 0 to this, so that longer numbers meet "
        "trained positions (max_positions must hold it plus the longest number)",
    )
    number_table: Literal["sinusoidal", "learned"] = Field(
        "sinusoidal",
        description="abacus, coupled, abacus-alibi: the vectors of digit places; "
        "sinusoidal, "
        "or learned (one table for source and target, trained like the token "
        "embeddings)",
    )

    activation: Literal["relu", "gelu", "swish"] = Field(
        "relu",
        description="the feed-forward's nonlinearity: relu max(0, x), gelu "
        "x Φ(x), swish x σ(x) (the OPUS-MT models')",
    )
    sinusoids: Literal["interleaved", "halves", "fairseq"] = Field(
        "interleaved",
        description="sinusoidal positions: a position's sines and cosines "
        "interleaved (sin, cos, sin, cos, ...), or every sine then every cosine "
        "(halves, MarianMT's), or fairseq's table (M2M100's, NLLB's): every sine "
        "then every cosine of frequencies from 1 to 1/10000 in d/2 - 1 steps",
    )
    first_position: int = Field(
        0,
        ge=0,
        le=4096,
        description="the number of a sequence's first position in the sinusoids "
        "(fairseq's models count from the padding id + 1: 2 in M2M100 and NLLB)",
    )
    scale_embeddings: bool = Field(
        True,
        description="token vectors multiplied by sqrt(d_model) before the "
        "positions are added",
    )
    embedding_norm: bool = Field(
        False,
        description="a LayerNorm on each side's embedding (tokens plus "
        "positions), before dropout (mBART's)",
    )
    output_bias: bool = Field(
        False, description="a learned bias added to the logits (MarianMT's)"
    )
    start_token: Literal["bos", "eos"] = Field(
        "bos",
        description="the embedding the decoder starts from: <bos>'s own, or "
        "<eos>'s (fairseq's models, NLLB, M2M100, mBART: </s> starts and ends)",
    )

    @model_validator(mode="after")
    def _fairseq_sinusoids_need_two_frequencies(self) -> TransformerConfig:
        if self.sinusoids == "fairseq" and self.d_model < 4:
            raise ValueError(
                f"sinusoids: fairseq needs d_model >= 4, not {self.d_model}"
            )
        return self

    @model_validator(mode="after")
    def _learned_places_need_numbers(self) -> TransformerConfig:
        placing = positions.placing_digits()
        if self.number_table == "learned" and self.positions not in placing:
            raise ValueError(
                f"number_table: learned is for {' or '.join(placing)} "
                f"positions, not {self.positions}"
            )
        return self
