"""The compiled update's clipping (``Updater._clip_flat``): the norm of all
gradients as one vector, and the same scaling as ``clip_grad_norm_``,
which eager training keeps."""

import pytest
import torch
from torch import nn

from rosetta.config.sections import TrainConfig
from rosetta.train.distributed import Group
from rosetta.train.update import Updater


def with_gradients(scale: float) -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3))
    model.zero_grad()
    (model(torch.randn(4, 5)).sum() * scale).backward()
    model[0].bias.grad = None  # a parameter without a gradient is left out
    return model


@pytest.mark.reference
@pytest.mark.parametrize("scale", [0.01, 1.0, 100.0])  # below, near, above clip_norm
def test_flat_clipping_equals_clip_grad_norm(scale):
    clipped, reference = with_gradients(scale), with_gradients(scale)
    cfg = TrainConfig(clip_norm=1.0)
    updater = Updater(
        clipped,
        torch.optim.Adam(clipped.parameters()),
        cfg,
        torch.device("cpu"),
        Group(),
        lambda *_: torch.zeros(()),
    )
    norm = updater._clip_flat()
    expected = torch.nn.utils.clip_grad_norm_(reference.parameters(), 1.0)
    torch.testing.assert_close(norm, expected, rtol=1e-6, atol=0)
    for ours, theirs in zip(clipped.parameters(), reference.parameters(), strict=True):
        if theirs.grad is None:
            assert ours.grad is None
        else:
            torch.testing.assert_close(ours.grad, theirs.grad, rtol=1e-6, atol=1e-9)
