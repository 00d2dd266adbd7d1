"""``model`` with ``arch: rnn``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from rosetta.config.sections import EncoderDecoderSection


class RNNConfig(EncoderDecoderSection):
    """``arch: rnn``: recurrent encoder-decoders."""

    arch: Literal["rnn"] = Field(description="the model family")
    cell: Literal["gru", "lstm", "rnn"] = Field(
        "gru", description="recurrent cell: GRU, LSTM or tanh RNN"
    )
    hidden_size: int = Field(512, gt=0, description="state width per direction")
    bidirectional: bool = Field(False, description="bidirectional encoder")
    attention: Literal["none", "bahdanau"] = Field(
        "none",
        description="bahdanau: additive attention over the encoder states at "
        "every step; none: the encoder's final state is the context",
    )
    rnn_impl: Literal["fused", "reference"] = Field(
        "fused", description="torch's fused kernels, or the cells step by step"
    )
    gru_variant: Literal["torch", "cho"] = Field(
        "torch", description="where the GRU's reset gate acts; fused needs 'torch'"
    )

    @field_validator("gru_variant", mode="before")
    @classmethod
    def _renamed_variant(cls, value: Any) -> Any:
        return "cho" if value == "notes" else value  # its name in older runs

    @model_validator(mode="after")
    def _fused_gru_is_torchs(self) -> RNNConfig:
        fused_gru = self.cell == "gru" and self.rnn_impl == "fused"
        if fused_gru and self.gru_variant == "cho":
            raise ValueError(
                "the fused kernels compute the torch form of the GRU: "
                "set gru_variant: torch, or rnn_impl: reference for Cho et al.'s form"
            )
        return self
