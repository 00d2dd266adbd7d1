"""A trained model with what it was trained with: what an inference object
(a translator, a language model) is made from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import nn

from rosetta.data.tokenizer import TokenizerPair

if TYPE_CHECKING:
    from rosetta.config.schema import Config


@dataclass(frozen=True)
class Trained:
    """A model, its tokenizers and configuration, and the device it runs on."""

    model: nn.Module
    tokenizers: TokenizerPair
    config: Config
    device: torch.device
