"""The interface every language model keeps: a model that reads a long
text in segments and carries a memory from each segment to the next.

``model(tokens, memory, memory_length) -> (features, memory)``: (n, L) ids
and what the previous segment left (None at the start) give the features
of every position, (n, L, d), and the memory for the next segment, one
tensor per layer of at most ``memory_length`` positions, (n, M, d)
(training passes the section's ``memory_length``; scoring and generating
their own). ``model.output_proj(features)`` gives the logits;
``len(model.layers)`` and ``model.d_model`` size the memory a checkpoint
holds. Training
(``rosetta.train.language_model_task``), scoring
(``rosetta.inference.text_scoring``) and generating
(``rosetta.inference.language_model``) use nothing else, so a new
language-model family keeps this interface and reuses all three.
"""

from __future__ import annotations

from collections.abc import Sized
from typing import Protocol

import torch
from torch import nn

Memory = list[torch.Tensor]  # per layer, (n, M, d): what earlier segments left


class SegmentLanguageModel(Protocol):
    """What training, scoring and generating ask of a language model."""

    layers: Sized  # one memory per layer
    d_model: int  # the width of its features and memory
    output_proj: nn.Linear  # features -> logits

    def __call__(
        self,
        tokens: torch.Tensor,
        memory: Memory | None = None,
        memory_length: int | None = None,
    ) -> tuple[torch.Tensor, Memory]: ...

    def eval(self) -> nn.Module: ...
