"""Checkpoint averaging: the mean of the weights, a checkpoint like any other."""

import pytest
import torch
from safetensors.torch import load_file

from rosetta.cli import main
from rosetta.jobs.loading import load_translator
from rosetta.runs.checkpoint import MODEL_FILE, read_index


def test_the_average_is_the_mean_of_the_weights_and_translates(toy_run, tmp_path):
    run = toy_run("transformer")
    names = read_index(run)["checkpoints"]
    assert len(names) == 2
    out = tmp_path / "averaged"
    assert main(["average", "-m", str(run), "-o", str(out)]) == 0  # all it keeps
    first, second = (load_file(str(run / name / MODEL_FILE)) for name in names)
    averaged = load_file(str(out / MODEL_FILE))
    assert averaged.keys() == first.keys()
    for name, tensor in averaged.items():
        expected = (first[name].double() + second[name].double()) / 2
        assert torch.equal(tensor, expected.to(tensor.dtype)), name
    translator = load_translator(out, device="cpu")
    assert len(translator.translate(["alpha beta", ""])) == 2


def test_averaging_one_checkpoint_gives_it_back(toy_run, tmp_path):
    run = toy_run("transformer")
    latest = read_index(run)["latest"]
    out = tmp_path / "one"
    assert main(["average", "-m", str(run), "--last", "1", "-o", str(out)]) == 0
    ours, theirs = (
        load_file(str(out / MODEL_FILE)),
        load_file(str(run / latest / MODEL_FILE)),
    )
    assert all(torch.equal(ours[name], theirs[name]) for name in theirs)


def test_more_checkpoints_than_the_run_keeps_is_a_clear_error(
    toy_run, tmp_path, capsys
):
    run = toy_run("transformer")
    assert main(["average", "-m", str(run), "--last", "3", "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "keeps 2 checkpoint(s), not 3: train with train.keep_last: 3" in err


@pytest.mark.parametrize("count", ["0", "-1"])
def test_a_count_below_one_is_refused(toy_run, tmp_path, capsys, count):
    run = toy_run("transformer")
    assert main(["average", "-m", str(run), "--last", count, "-o", str(tmp_path)]) == 2
    assert "--last: must be greater than or equal to 1" in capsys.readouterr().err
