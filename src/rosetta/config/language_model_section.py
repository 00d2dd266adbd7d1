"""What every language-model family's ``model`` section has (``task: lm``):
how the text is read in segments and how much memory is carried between
them. Training, scoring and generating read these keys, whatever the
model (``rosetta.interfaces.language_model``)."""

from __future__ import annotations

from pydantic import Field

from rosetta.config.sections import ModelSection


class LanguageModelSection(ModelSection):
    """``layers`` and ``d_model`` size the memory a checkpoint holds (one
    tensor per layer, ``d_model`` wide); the other keys say how the text is
    read."""

    TASK = "lm"

    layers: int = Field(6, gt=0, description="stacked layers")
    d_model: int = Field(384, gt=0, description="model width")
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

    @property
    def scoring_memory(self) -> int:
        """The memory length evaluation uses."""
        if self.eval_memory_length is None:
            return self.memory_length
        return self.eval_memory_length
