"""What the trainer asks of a training task: each family provides one
(``Family.training``): the translation task, the NAT's, the language model's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import torch
from torch import nn

from rosetta.data.tokenizer import TokenizerPair

if TYPE_CHECKING:
    from rosetta.config.schema import Config


class TrainingTask(Protocol):
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
    # ValueError for tensors read back that do not fit the task (said in one
    # line naming the checkpoint's file)
    def load_state_tensors(self, tensors: dict[str, torch.Tensor]) -> None: ...


@dataclass(frozen=True)
class TrainingSetup:
    """What a family's training task is made from.

    ``data`` is what the family's ``prepare`` returned; ``rank`` and
    ``world_size`` say which of how many training processes this is; ``log``
    prints (on the main process) or does nothing.
    """

    config: Config
    model: nn.Module
    data: Any
    device: torch.device
    run_dir: Path
    rank: int
    world_size: int
    log: Callable[[str], None]
