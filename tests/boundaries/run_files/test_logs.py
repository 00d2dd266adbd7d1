"""The logs and progress records Rosetta reads back: the training log
(``metrics.jsonl``, read by ``rosetta plot`` and by resuming), the partial
record of ``rosetta distill``, and the error file a training process leaves
its launcher. Each is damaged (a key removed or retyped, cut short, other
JSON, nested too deep), or replaced by a link to an intact copy, by a FIFO
or by a folder. (A run's own records:
``tests/boundaries/run_files/test_records.py``; tensors:
``tests/boundaries/run_files/test_checkpoints.py`` and
``tests/boundaries/run_files/test_exports.py``; flat arrays:
``tests/boundaries/run_files/test_arrays.py``.)

The promise: the command that reads the file works, with the result the
intact file gives, or exits 2 in one line; never a traceback, never a hang.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rosetta.train.metrics import MetricsLog
from tests.runtime.test_outputs import run_refused
from tests.support.read_back import (
    DEEP,
    FUZZ,
    SOURCES,
    damage,
    fifo_in_place,
    run_main,
)
from tests.support.toy import toy_config


@pytest.mark.slow
def test_a_damaged_distill_record_is_one_line_or_harmless(
    toy_run, tmp_path_factory, capsys, monkeypatch
):
    """``OUT.partial.json`` says what a stopped run was started with; damaged,
    it is refused before the teacher loads, or the run goes on whole."""
    import rosetta.jobs.distill as verb

    made: list[dict] = []
    check = verb.check_partial

    def recorded(output: Path, made_of: dict) -> bool:
        made.append(made_of)  # the record an intact run keeps
        return check(output, made_of)

    monkeypatch.setattr(verb, "check_partial", recorded)
    work = tmp_path_factory.mktemp("distill")
    (work / "in.txt").write_text(SOURCES)
    argv = ["distill", "-m", toy_run("transformer"), "--src", work / "in.txt"]
    run_main(capsys, [*argv, "-o", work / "whole.txt"])
    whole = (work / "whole.txt").read_text()

    @FUZZ
    @given(damaged=damage(made[0]))
    @example(damaged=DEEP)
    def check_damage(damaged):
        out = work / "out.txt"
        for path in (out, work / "out.txt.partial"):
            path.unlink(missing_ok=True)
        (work / "out.txt.partial").write_text(whole.splitlines()[0] + "\n")
        text = damaged if isinstance(damaged, str) else json.dumps(damaged)
        (work / "out.txt.partial.json").write_text(text)
        status, _, _ = run_main(capsys, [*argv, "-o", out])
        assert status == 2 or out.read_text() == whole

    check_damage()


def log_lines(run: Path) -> list[dict]:
    return [
        json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()
    ]


def with_line(records: list[dict], index: int, line: str) -> str:
    """The log of ``records`` with record ``index`` written as ``line``."""
    lines = [json.dumps(r) for r in records]
    lines[index] = line.replace("\n", " ")
    return "\n".join(lines) + "\n"


@st.composite
def damaged_log(draw, records: list[dict]) -> tuple[int, str]:
    """A log whose record ``index`` is damaged; (index, the log's text)."""
    index = draw(st.integers(0, len(records) - 1))
    line = draw(damage(records[index]))
    return index, with_line(
        records, index, line if isinstance(line, str) else json.dumps(line)
    )


@pytest.mark.slow
def test_a_damaged_log_is_plotted_or_refused_in_one_line(
    toy_run, tmp_path_factory, capsys
):
    records = log_lines(toy_run("transformer"))

    @FUZZ
    @given(damaged=damaged_log(records))
    def check(damaged):
        _, text = damaged
        work = tmp_path_factory.mktemp("plot")
        (work / "metrics.jsonl").write_text(text)
        run_main(capsys, ["plot", "curves", work, "-o", work / "curves.svg"])
        shutil.rmtree(work)

    check()


LOG = [{"kind": "train", "step": s, "loss": 1.0} for s in (5, 10, 15)]


@FUZZ
@given(damaged=damaged_log(LOG))
@example(damaged=(0, with_line(LOG, 0, '{"kind": "train", "step": "5"}')))
@example(damaged=(1, with_line(LOG, 1, DEEP)))
def test_resuming_keeps_the_intact_records_up_to_its_step(tmp_path_factory, damaged):
    """``forget_after`` drops the records after the step resumed from, and a
    damaged record whatever its step; it keeps every intact one before it."""
    index, text = damaged
    log = MetricsLog(tmp_path_factory.mktemp("log") / "metrics.jsonl")
    log.path.write_text(text)
    log.forget_after(10)
    kept = [json.loads(line) for line in log.path.read_text().splitlines()]
    intact = [record for i, record in enumerate(LOG[:2]) if i != index]
    assert [r for r in kept if r in intact] == intact
    steps = [r.get("step") if isinstance(r, dict) else None for r in kept]
    assert all(type(step) is int and step <= 10 for step in steps), kept


def test_a_log_nested_too_deep_is_dropped_on_resume_and_refused_by_plot(
    tmp_path, capsys
):
    log = MetricsLog(tmp_path / "metrics.jsonl")
    log.append("train", 5, loss=1.0, lr=0.1)
    with open(log.path, "a") as handle:
        handle.write(DEEP + "\n")
    _, _, err = run_main(capsys, ["plot", "curves", tmp_path, "-o", tmp_path / "c.svg"])
    assert "metrics.jsonl:2: not JSON (recursion limit exceeded" in err
    log.forget_after(10)
    assert log.path.read_text().count("\n") == 1


@pytest.mark.parametrize("how", ["link", "fifo"])
def test_a_runs_log_replaced_is_refused_by_plot(tmp_path, capsys, how):
    """In a run folder the log is Rosetta's own: never read through a link
    (a log named on the command line is the user's, and is followed)."""
    intact = tmp_path / "intact.jsonl"
    intact.write_text('{"kind": "train", "step": 1, "loss": 2.0, "lr": 0.1}\n')
    run = tmp_path / "run"
    run.mkdir()
    argv = ["plot", "curves", run, "-o", tmp_path / "c.svg"]
    if how == "link":
        (run / "metrics.jsonl").symlink_to(intact)
        assert run_main(capsys, argv)[0] == 2
        argv[2] = run / "metrics.jsonl"
        assert run_main(capsys, argv)[0] == 0
        return
    with fifo_in_place(run / "metrics.jsonl") as released:
        assert run_main(capsys, argv)[0] == 2
    assert not released


def test_a_log_folder_taken_by_a_file_is_one_line(tmp_path, capsys):
    _, config = toy_config(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").mkdir()
    argv = ["train", str(config), "-o", str(run)]
    run_refused(argv, capsys, "metrics.jsonl must be a file; move it")


def test_a_launchers_error_file_nested_too_deep_is_no_refusal(tmp_path):
    from rosetta.train.distributed import refusal

    path = tmp_path / "error.json"
    for text in (DEEP, json.dumps({"message": [[["x"]]]}), "[1]", '{"message": "no'):
        path.write_text(text)
        assert refusal(str(path)) is None
    path.write_text(json.dumps({"message": "one line"}))
    assert refusal(str(path)) == "one line"
