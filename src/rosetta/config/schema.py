"""The whole configuration of a run, ``Config``: its sections, and the
``model`` section of the family that ``model.arch`` names (``rosetta.families``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Discriminator, Field, Tag, model_validator

from rosetta.config.sections import (
    DataConfig,
    DecodeConfig,
    Section,
    TokenizerConfig,
    TrainConfig,
)
from rosetta.families import FAMILIES

ARCHS = tuple(family.arch for family in FAMILIES)


def _arch_of(section: Any) -> str | None:
    """Which family a model section belongs to; a YAML section without
    ``arch`` is the first family's (the Transformer)."""
    if isinstance(section, dict):
        return section.get("arch", ARCHS[0])
    return getattr(section, "arch", None)


# The model section: one family's configuration, picked by ``arch``. Each
# family forbids the keys it does not read, like every other section.
ModelConfig = Annotated[
    Union[tuple(Annotated[f.config, Tag(f.arch)] for f in FAMILIES)],  # noqa: UP007
    Discriminator(
        _arch_of,
        custom_error_type="unknown_arch",
        custom_error_message=f"unknown arch; use one of: {', '.join(ARCHS)}",
    ),
]


class Config(Section):
    task: Literal["translate", "lm"] = Field(
        "translate",
        description="translate: a sequence-to-sequence model on parallel text; "
        "lm: a language model (arch transformer-xl) on one long text",
    )
    data: DataConfig = Field(description="the training, validation and test data")
    tokenizer: TokenizerConfig = Field(
        TokenizerConfig(), description="how text becomes tokens"
    )
    model: ModelConfig = Field(
        FAMILIES[0].config(), description="the architecture, picked by model.arch"
    )
    train: TrainConfig = Field(
        TrainConfig(), description="optimisation and its schedule"
    )
    decode: DecodeConfig = Field(
        DecodeConfig(), description="search limits and batching"
    )

    @model_validator(mode="after")
    def _compatible(self) -> Config:
        if self.task != self.model.TASK:
            fitting = [f.arch for f in FAMILIES if self.task == f.config.TASK]
            raise ValueError(
                f"task {self.task} goes with model.arch: {' or '.join(fitting)}; "
                f"model.arch {self.model.arch} with task: {self.model.TASK}"
            )
        language_model = self.task == "lm"
        splits = {"train": self.data.train, "valid": self.data.valid}
        splits["test"] = self.data.test
        for name, files in splits.items():
            if files is not None and (files.text is not None) != language_model:
                kind = "one 'text' file" if language_model else "parallel files"
                raise ValueError(f"data.{name}: task {self.task} reads {kind}")
        if self.model.shares_embeddings and not self.tokenizer.joint:
            raise ValueError(
                "model.share_embeddings needs one joint vocabulary: "
                "set tokenizer.joint: true or model.share_embeddings: false"
            )
        return self
