"""The sampler's filters on a fixed distribution."""

import math

import pytest
import torch

from rosetta.search import sampler

PROBS = [0.4, 0.3, 0.2, 0.1]


def draws(count=4000, **options):
    log_probs = torch.tensor([PROBS]).log().expand(count, -1)
    choose = sampler(generator=torch.Generator().manual_seed(0), **options)
    return torch.bincount(choose(log_probs), minlength=len(PROBS)) / count


def test_plain_sampling_follows_the_distribution():
    freq = draws()
    assert freq.tolist() == pytest.approx(PROBS, abs=0.03)


def test_top_k_keeps_the_k_most_likely_renormalised():
    freq = draws(top_k=2)
    assert freq[2:].sum() == 0
    assert freq[0] / freq[1] == pytest.approx(4 / 3, rel=0.1)


def test_top_p_keeps_the_smallest_set_reaching_p():
    assert draws(top_p=0.5)[2:].sum() == 0  # 0.4 < 0.5 <= 0.4 + 0.3
    assert draws(top_p=0.75)[3] == 0  # 0.7 < 0.75 <= 0.9
    assert (draws(top_p=0.05)[1:] == 0).all()  # the best token always stays


def test_temperature_sharpens_and_flattens():
    cold, hot = draws(temperature=0.25), draws(temperature=4.0)
    assert cold[0] > 0.7
    expected_hot = [p**0.25 for p in PROBS]
    expected_hot = [p / sum(expected_hot) for p in expected_hot]
    assert hot.tolist() == pytest.approx(expected_hot, abs=0.03)
    assert not math.isclose(cold[0], hot[0])


def test_bad_sampling_options_are_refused():
    for options in ({"temperature": 0}, {"top_k": -1}, {"top_p": 0.0}, {"top_p": 1.5}):
        with pytest.raises(ValueError):
            sampler(**options)
