import itertools
import math

import pytest

from rosetta.train import learning_rate


def test_linear_warmup_reaches_the_peak_at_step_n():
    peak, n = 1e-3, 100
    assert learning_rate(1, peak, n) == pytest.approx(peak / n)
    assert learning_rate(50, peak, n) == pytest.approx(peak / 2)
    assert learning_rate(100, peak, n) == pytest.approx(peak)


def test_inverse_square_root_decay_after_warmup():
    peak, n = 1e-3, 100
    assert learning_rate(400, peak, n) == pytest.approx(peak * math.sqrt(100 / 400))
    rates = [learning_rate(s, peak, n) for s in range(100, 1000)]
    assert all(a >= b for a, b in itertools.pairwise(rates))


def test_constant_after_warmup_and_no_warmup():
    assert learning_rate(500, 2e-4, 100, "constant") == 2e-4
    assert learning_rate(1, 2e-4, 0, "constant") == 2e-4


def test_steps_count_from_one():
    with pytest.raises(ValueError):
        learning_rate(0, 1e-3, 10)
