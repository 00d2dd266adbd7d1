"""The initialisation every attention model gives its linear layers."""

from __future__ import annotations

from torch import nn


def xavier_linear_layers(*parts: nn.Module) -> None:
    """Every ``nn.Linear`` inside ``parts``, in order: Glorot-uniform weights
    (variance ``2 / (fan_in + fan_out)``, which keeps activations and
    gradients of a similar scale through the stack) and zero biases."""
    for part in parts:
        for module in part.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
