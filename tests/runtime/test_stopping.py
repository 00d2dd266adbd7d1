"""SIGTERM during ``rosetta import`` or ``rosetta distill``: one line on
standard error saying what happened and what was kept, exit status 143,
and nothing half-written left behind (``rosetta.runtime.stopping``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from rosetta.cli import main
from rosetta.errors import Stopped
from rosetta.runtime.stopping import SIGTERM_STATUS, said_on_sigterm
from tests.support.paths import ROOT

# ``rosetta ARGS``, its import held once the run is written into its
# temporary folder: a moment the signal finds it at, however fast the machine
HELD_IMPORT = """
import sys, time
from rosetta.families.transformer.hf import importing
written = importing.import_marian
def held(*args):
    written(*args)
    print("written", flush=True)
    time.sleep(120)
importing.import_marian = held
from rosetta.cli import command_line
sys.argv = ["rosetta", *sys.argv[1:]]
command_line()
"""


def ended(process: subprocess.Popen) -> tuple[int, list[str]]:
    """The status of ``process`` and its standard error's lines."""
    _, err = process.communicate(timeout=120)
    return process.returncode, err.splitlines()


def test_sigterm_in_a_block_is_stopped_with_what_was_kept():
    previous = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Stopped) as stopped, said_on_sigterm(lambda: "all is kept"):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)  # the handler raises before this ends
    assert str(stopped.value) == "stopped by SIGTERM; all is kept"
    assert stopped.value.status == SIGTERM_STATUS == 143
    assert signal.getsignal(signal.SIGTERM) is previous  # put back


def test_sigterm_during_an_import_says_the_folder_is_as_it_was(tmp_path, capsys):
    pytest.importorskip("transformers")
    from benchmarks.marian_model import make_marian

    source = make_marian(tmp_path / "opus-mt-de-en")
    run = tmp_path / "run"
    command = ["import", "hf", str(source), "-o", str(run)]
    assert main(command) == 0
    before = sorted((p.name, p.stat().st_size) for p in run.rglob("*"))
    capsys.readouterr()
    process = subprocess.Popen(
        [sys.executable, "-c", HELD_IMPORT, *command, "--overwrite"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:  # until the new run waits in its temporary folder
        if line.strip() == "written":
            break
    process.send_signal(signal.SIGTERM)
    status, err = ended(process)
    assert status == 143, err
    assert err == [
        f"rosetta import: stopped by SIGTERM; {run} is as it was (the import "
        "fills a temporary folder, now removed): run the same command again to "
        "import the model"
    ], err
    assert sorted(os.listdir(tmp_path)) == ["opus-mt-de-en", "run"]  # no temporary
    assert sorted((p.name, p.stat().st_size) for p in run.rglob("*")) == before


def test_sigterm_during_a_distillation_keeps_its_lines_and_carries_on(
    toy_run, tmp_path, capsys
):
    source = tmp_path / "src.txt"
    lines = 3000
    source.write_text("alpha beta gamma delta\n" * lines, encoding="utf-8")
    output = tmp_path / "out.txt"
    partial = tmp_path / "out.txt.partial"
    command = ["distill", "-m", str(toy_run("transformer")), "--src", str(source)]
    command += ["-o", str(output), "--chunk-lines", "10", "--device", "cpu"]
    process = subprocess.Popen(
        [sys.executable, "-m", "rosetta", *command],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    # its first chunk finished: thousands of lines are still to translate
    while not (partial.is_file() and partial.stat().st_size):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    process.send_signal(signal.SIGTERM)
    status, err = ended(process)
    assert status == 143, err
    assert err[-1] == (
        f"rosetta distill: stopped by SIGTERM; the lines finished so far are "
        f"kept in {partial}: the same command again carries on from them"
    ), err
    assert not any("Traceback" in line for line in err), err
    assert not output.exists()
    kept = len(partial.read_text(encoding="utf-8").splitlines())
    assert 0 < kept < lines
    capsys.readouterr()
    assert main(command) == 0
    assert len(output.read_text(encoding="utf-8").splitlines()) == lines
    assert "translated now" in capsys.readouterr().err
