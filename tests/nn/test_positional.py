import math

import pytest
import torch

from rosetta.nn import positional_encoding


@pytest.mark.reference
def test_worked_example_of_the_spec():
    table = positional_encoding(2, 4)
    assert torch.allclose(table[0], torch.tensor([0.0, 1.0, 0.0, 1.0]))
    expected = torch.tensor([0.841, 0.540, 0.010, 1.000])
    assert torch.allclose(table[1], expected, atol=5e-4)


@pytest.mark.reference
def test_every_entry_follows_the_formula():
    d = 6
    table = positional_encoding(50, d)
    for pos in range(50):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert table[pos, 2 * i + 1].item() == pytest.approx(
                math.cos(angle), abs=1e-6
            )


def test_odd_width_and_shape():
    table = positional_encoding(7, 5)
    assert table.shape == (7, 5) and table.dtype == torch.float32
    assert torch.allclose(table[:, 4], torch.sin(torch.arange(7) / 10000 ** (4 / 5)))
