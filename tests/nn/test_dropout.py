"""Dropout: drop rate, scaling, gradients, seeding, inference identity."""

import math

import pytest
import torch

from rosetta.nn import Dropout
from rosetta.nn.dropout import dropout_mask

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_drop_rate_and_scale(p, device):
    """On the device it is asked for (the speed benchmarks draw it on a GPU)."""
    torch.manual_seed(0)
    count = 1_000_003  # not a multiple of four words' worth of bits
    mask = dropout_mask(torch.Size([count]), p, torch.float32, torch.device(device))
    assert mask.device.type == device
    dropped = float((mask == 0).float().mean())
    # binomial standard deviation of the observed rate, 5 sigmas
    assert abs(dropped - p) < 5 * math.sqrt(p * (1 - p) / count)
    kept = mask[mask != 0]
    assert torch.allclose(kept, torch.full_like(kept, 1 / (1 - p)), rtol=1e-4)
    assert abs(float(mask.mean()) - 1.0) < 0.01  # expectation preserved


def test_bits_are_not_correlated_within_a_word():
    """The four 16-bit draws of one 64-bit word decide independently."""
    torch.manual_seed(1)
    mask = dropout_mask(torch.Size([400_000, 4]), 0.5, torch.float32) > 0
    for a in range(4):
        for b in range(a + 1, 4):
            both = float((mask[:, a] & mask[:, b]).float().mean())
            assert abs(both - 0.25) < 0.005


def test_gradient_is_the_mask():
    torch.manual_seed(2)
    layer = Dropout(0.3).train()
    x = torch.randn(64, 33, requires_grad=True)
    y = layer(x)
    y.sum().backward()
    scale = torch.where(x.detach() != 0, y.detach() / x.detach(), 0.0)
    assert torch.allclose(x.grad, scale, atol=1e-6)


def test_same_seed_same_mask_and_eval_is_identity():
    x = torch.randn(10, 20)
    layer = Dropout(0.2).train()
    torch.manual_seed(3)
    first = layer(x)
    torch.manual_seed(3)
    assert torch.equal(layer(x), first)
    assert not torch.equal(layer(x), first)  # the generator moved on
    layer.eval()
    assert layer(x) is x
    assert Dropout(0.0).train()(x) is x


def test_dtype_follows_the_input():
    x = torch.randn(8, 8, dtype=torch.bfloat16)
    assert Dropout(0.1).train()(x).dtype == torch.bfloat16


def test_bad_probability():
    with pytest.raises(ValueError, match="dropout probability"):
        Dropout(1.0)
