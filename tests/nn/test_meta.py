"""Building a model without initialising it (``uninitialised``), for
weights loaded next, and the finiteness check every loaded tensor takes."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from rosetta.nn.meta import INITIALISERS, uninitialised
from rosetta.runs.weights import CHUNK, all_finite


def test_nothing_is_drawn_inside_and_everything_is_restored_after():
    before = {name: getattr(nn.init, name) for name in INITIALISERS}
    torch.manual_seed(0)
    with uninitialised():
        torch.manual_seed(0)
        layer = nn.Linear(4, 3)
        state = torch.random.get_rng_state()
    torch.manual_seed(0)
    assert torch.equal(state, torch.random.get_rng_state())  # no number drawn
    assert layer.weight.shape == (3, 4)
    with pytest.raises(ValueError), uninitialised():
        raise ValueError("a failed build")
    assert {name: getattr(nn.init, name) for name in INITIALISERS} == before
    drawn = nn.Linear(4, 3).weight
    assert bool(drawn.abs().max() <= 0.5) and bool(drawn.abs().sum() > 0)


def test_a_restored_model_is_the_saved_one(toy_run):
    """Built uninitialised, loaded: the weights are the checkpoint's."""
    from safetensors.torch import load_file

    from rosetta.jobs.restore import restore
    from rosetta.runs import checkpoint as ckpt

    run = toy_run("transformer")
    restored = restore(run, torch.device("cpu"), which="latest")
    saved = load_file(str(ckpt.resolve_checkpoint(run, "latest") / ckpt.MODEL_FILE))
    state = restored.model.state_dict()
    assert all(torch.equal(state[name], tensor) for name, tensor in saved.items())


@pytest.mark.parametrize("where", [0, CHUNK - 1, CHUNK + 5, 3 * CHUNK - 1])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_one_entry_not_finite_anywhere_is_found(where, bad):
    tensor = torch.zeros(3 * CHUNK)
    assert bool(all_finite(tensor))
    tensor[where] = bad
    assert not bool(all_finite(tensor))


def test_finite_entries_whose_sum_overflows_are_finite():
    tensor = torch.full((4,), 3e38)  # their float32 sum is infinite
    assert not bool(tensor.sum().isfinite())
    assert bool(all_finite(tensor))
    assert bool(all_finite(torch.zeros(0)))
