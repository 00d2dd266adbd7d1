"""What the trainer asks of a training task: each family provides one
(``Family.training``): the translation task, the NAT's, the language model's."""

from __future__ import annotations

from typing import Any, Protocol

import torch

from rosetta.data.tokenizer import TokenizerPair


class Task(Protocol):
    """What the trainer asks of the data and the model it trains."""

    tokenizers: TokenizerPair
    # (source, output, reference) of a few validation pairs as the last
    # validation made them; none where the task has no such text
    examples: list[tuple[str, str, str]]

    @property
    def has_validation(self) -> bool: ...
    @property
    def best_metric(self) -> str: ...
    def epoch_batches(self, epoch: int) -> list[Any]: ...
    def batches_per_update(self, world_size: int) -> int: ...
    def share(
        self, group: list[Any], rank: int, world_size: int
    ) -> list[tuple[Any, int]]: ...
    def loss_sum(self, forward: torch.nn.Module, batch: Any) -> torch.Tensor: ...
    def validate(self) -> dict[str, float]: ...
    def state_tensors(self) -> dict[str, torch.Tensor]: ...
    def load_state_tensors(self, tensors: dict[str, torch.Tensor]) -> None: ...
