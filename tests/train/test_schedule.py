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


@pytest.mark.parametrize("decay", ["cosine", "linear"])
def test_decays_to_a_floor_start_at_the_peak_and_end_at_the_floor(decay):
    peak, floor, warmup, total = 1e-3, 1e-5, 100, 1100
    rate = lambda step: learning_rate(step, peak, warmup, decay, total, floor)  # noqa: E731
    assert rate(warmup) == pytest.approx(peak)  # the warm-up's last step
    assert rate(total) == pytest.approx(floor)
    assert rate(total + 500) == pytest.approx(floor)  # a longer run stays there
    halfway = (peak + floor) / 2  # both pass the middle at half the decay
    assert rate(warmup + (total - warmup) // 2) == pytest.approx(halfway)
    rates = [rate(step) for step in range(warmup, total + 1)]
    assert all(a >= b for a, b in itertools.pairwise(rates))


def test_cosine_is_the_formula_and_linear_a_straight_line():
    peak, floor = 2.0, 0.5
    quarter = learning_rate(35, peak, 10, "cosine", 110, floor)  # t = 1/4
    assert quarter == pytest.approx(
        floor + (peak - floor) * (1 + math.cos(math.pi / 4)) / 2
    )
    assert learning_rate(35, peak, 10, "linear", 110, floor) == pytest.approx(
        peak - (peak - floor) / 4
    )
    with pytest.raises(ValueError, match="needs the run's length"):
        learning_rate(35, peak, 10, "cosine")


def test_a_decay_to_a_floor_needs_the_runs_length_and_a_floor_below_the_peak():
    from pydantic import ValidationError

    from rosetta.config.sections import TrainConfig

    with pytest.raises(ValidationError, match=r"ends at train\.max_steps"):
        TrainConfig(decay="cosine", max_steps=None)
    with pytest.raises(ValidationError, match=r"min_lr\n.*above lr"):
        TrainConfig(decay="linear", max_steps=100, lr=1e-4, min_lr=1e-3)
    assert TrainConfig(decay="linear", max_steps=100, min_lr=1e-6).min_lr == 1e-6
