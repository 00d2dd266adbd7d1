"""The whole configuration of a run, ``Config``: its sections, and the
``model`` section of one model family.

The configuration knows no family: ``config_class(sections)`` makes the
``Config`` whose ``model`` is one of the ``sections`` given (picked by
``model.arch``; the first when no ``arch`` is set), and
``rosetta.jobs.run_config`` gives it the sections of every family Rosetta lists.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Annotated, ClassVar, Literal, Union

from pydantic import (
    Discriminator,
    Field,
    SerializeAsAny,
    Tag,
    create_model,
    model_validator,
)

from rosetta.config.sections import (
    DataConfig,
    DecodeConfig,
    ModelSection,
    Section,
    TokenizerConfig,
    TrainConfig,
)


class Config(Section):
    # the model sections this class picks from (``config_class``)
    MODEL_SECTIONS: ClassVar[tuple[type[ModelSection], ...]] = ()

    task: Literal["translate", "lm"] = Field(
        "translate",
        description="translate: a sequence-to-sequence model on parallel text; "
        "lm: a language model on one long text (a model.arch whose family "
        "learns that)",
    )
    data: DataConfig = Field(description="the training, validation and test data")
    tokenizer: TokenizerConfig = Field(
        TokenizerConfig(), description="how text becomes tokens"
    )
    model: SerializeAsAny[ModelSection] = Field(
        description="the architecture, picked by model.arch"
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
            fitting = [
                s.arch_name() for s in self.MODEL_SECTIONS if self.task == s.TASK
            ]
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


def _arch_of(default: str) -> Callable[[object], str | None]:
    """Which section a ``model`` value is: its ``arch``, or ``default``."""

    def arch(section: object) -> str | None:
        if isinstance(section, dict):
            return section.get("arch", default)
        return getattr(section, "arch", None)

    return arch


@functools.cache
def config_class(sections: tuple[type[ModelSection], ...]) -> type[Config]:
    """``Config`` whose ``model`` is one of ``sections``, picked by ``arch``;
    a ``model`` without ``arch`` is the first section's (each section
    forbids the keys it does not read, like every other section)."""
    archs = tuple(section.arch_name() for section in sections)
    tagged = tuple(Annotated[s, Tag(s.arch_name())] for s in sections)
    # The union's members are known only here, at run time: the subscripts
    # are calls, which a type checker does not read as type expressions.
    union = operator.getitem(
        Annotated,
        (
            operator.getitem(Union, tagged),
            Discriminator(
                _arch_of(archs[0]),
                custom_error_type="unknown_arch",
                custom_error_message=f"unknown arch; use one of: {', '.join(archs)}",
            ),
        ),
    )
    made = create_model(
        "Config",
        __base__=Config,
        __module__=Config.__module__,
        model=(
            operator.getitem(SerializeAsAny, union),
            Field(
                sections[0].model_validate({}),  # the first family's defaults
                description="the architecture, picked by model.arch",
            ),
        ),
    )
    made.MODEL_SECTIONS = sections
    return made
