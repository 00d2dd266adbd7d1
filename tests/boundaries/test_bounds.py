"""Bounded work: counts, sizes and threads are checked against what the
machine can do before any work starts; one line, exit 2, or a notice."""

from __future__ import annotations

from pathlib import Path

import pytest

from rosetta.cli import main
from rosetta.data.text import read_text
from rosetta.errors import RosettaError
from rosetta.runtime import threads
from tests.runtime.test_outputs import run_refused
from tests.support.toy import toy_config


@pytest.mark.parametrize("flag", ["--count", "--valid", "--test"])
def test_a_task_too_large_to_hold_is_refused_at_once(tmp_path, capsys, flag):
    argv = ["task", "copy", "-o", str(tmp_path / "tk"), flag, "1000000000000"]
    run_refused(argv, capsys, "GB of memory; this machine has")
    assert not (tmp_path / "tk").exists()


def test_a_positions_plot_too_large_is_run_refused(tmp_path, capsys):
    argv = ["plot", "positions", "--length", "1000000000000"]
    run_refused([*argv, "-o", str(tmp_path / "p.png")], capsys, "GB of memory")


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("model.d_ff=1000000000", "GB of memory; this machine has"),
        ("model.d_model=1000000000000", "sizes that cannot be built"),
        ("model.max_positions=4", "the model's positions hold 4"),
    ],
)
def test_a_model_that_cannot_fit_is_refused_before_training(
    tmp_path, capsys, setting, expected
):
    _, config = toy_config(tmp_path)
    argv = ["train", str(config), "-o", str(tmp_path / "run"), "--set", setting]
    if "d_model" in setting:
        argv += ["--set", "model.heads=1"]
    run_refused(argv, capsys, expected)


def test_adams_rates_are_checked_in_the_config(tmp_path, capsys):
    _, config = toy_config(tmp_path)
    capsys.readouterr()
    argv = ["train", str(config), "-o", str(tmp_path / "r"), "--set"]
    assert main([*argv, "train.betas=[2.0, 2.0]"]) == 2
    assert "train.betas.0: Input should be less than 1" in capsys.readouterr().err


def test_threads_beyond_the_cores_are_capped_with_a_notice(capsys):
    cores = threads.cores()
    assert threads.at_most_cores(cores) == cores
    assert threads.at_most_cores(99999999999999999999) == cores
    assert f"more than the {cores} cores" in capsys.readouterr().err


def test_a_malformed_local_world_size_is_one_line(monkeypatch):
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "abc")
    with pytest.raises(RosettaError, match="LOCAL_WORLD_SIZE='abc'"):
        threads.threads_beside(0.0)


def test_a_log_folder_taken_by_a_file_is_one_line(tmp_path, capsys):
    _, config = toy_config(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").mkdir()
    argv = ["train", str(config), "-o", str(run)]
    run_refused(argv, capsys, "metrics.jsonl must be a file; move it")


def test_a_word_text_with_cr_only_line_ends_names_the_line(tmp_path):
    path = tmp_path / "text.txt"
    path.write_bytes(b"A\r\nB\nC\rD\r")
    assert read_text(path) == "A\r\nB\nC\rD\r"  # characters: as they are
    with pytest.raises(RosettaError, match=r"text\.txt:3: a carriage return"):
        read_text(path, lines_only=True)


@pytest.mark.parametrize("kind", ["nat", "nat-ctc"])
def test_exporting_a_model_ctranslate2_cannot_run_is_one_line(
    toy_run, tmp_path, capsys, kind
):
    pytest.importorskip("ctranslate2")
    argv = ["export", "ctranslate2", "-m", str(toy_run(kind))]
    expected = "(arch nat); ctranslate2 runs"
    run_refused([*argv, "-o", str(tmp_path / "e")], capsys, expected)
    assert not Path(tmp_path / "e").exists()
