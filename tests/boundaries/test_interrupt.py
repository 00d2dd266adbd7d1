"""Ctrl-C at any moment of a command is one line on standard error and exit
status 130: while the command line loads, while PyTorch is imported inside a
command, and while the command works."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time

import pytest

from rosetta.cli import main
from tests.support.paths import ROOT

# ``python -X importtime`` writes a line to standard error as each import
# ends: the moments below count from one of them, so each lands where it
# names, however fast this machine is
IMPORTED = "import time:"
LOADED = "| rosetta.cli"  # the command line loaded: ``main`` runs next
MOMENTS = [
    (LOADED, 0.0),
    (" sympy", 0.0),  # inside PyTorch's import, where it once broke
    (LOADED, 0.05),
    (LOADED, 0.2),
    (LOADED, 0.5),
    (LOADED, 1.0),
    (LOADED, 2.0),
]


def interrupted_at(command: list[str], marker: str, delay: float):
    """``command`` started with ``python -X importtime -m rosetta``, sent
    SIGINT ``delay`` seconds after the import line naming ``marker`` (none
    if it ends first); its status and its standard error, less the import
    lines."""
    process = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "rosetta", *command],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    said: list[str] = []
    seen = threading.Event()

    def read() -> None:
        for line in process.stderr:
            if line.startswith(IMPORTED):
                if line.rstrip().endswith(marker):
                    seen.set()
            else:
                said.append(line)

    reader = threading.Thread(target=read)
    reader.start()
    while not seen.wait(0.01):
        if process.poll() is not None:
            break
    else:
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
    status = process.wait(timeout=120)
    reader.join(timeout=10)
    return status, "".join(said)


@pytest.fixture(scope="module")
def translating(toy_run, tmp_path_factory):
    """A translation command that works for a few seconds, and the lines it
    writes to standard error when nobody interrupts it."""
    source = tmp_path_factory.mktemp("interrupt") / "in.txt"
    source.write_text("alpha beta gamma\n" * 200, encoding="utf-8")
    run = toy_run("transformer")
    command = ["translate", "-m", str(run), "-i", str(source), "--beam", "4"]
    command += ["--device", "cpu"]
    status, stderr = interrupted_at(command, "(never)", 0.0)
    assert status == 0, stderr
    return command, stderr.splitlines()


@pytest.mark.slow
@pytest.mark.parametrize(("marker", "delay"), MOMENTS)
def test_ctrl_c_at_any_moment_is_one_line(translating, marker, delay):
    command, said = translating
    status, stderr = interrupted_at(command, marker, delay)
    assert "Traceback" not in stderr, stderr
    added = [line for line in stderr.splitlines() if line not in said]
    # 0: it had finished. -SIGINT, which a shell reports as 130 too: Python
    # ends so when the interrupt came inside code that PyTorch runs through
    # the C API, or as Python shut down after the command had finished
    assert status in (130, 0, -signal.SIGINT), (status, stderr)
    allowed = [["interrupted"]] if status == 130 else [[]]
    allowed += [["interrupted"]] if status == -signal.SIGINT else []
    assert added in allowed, (status, stderr)


def test_an_error_that_follows_ctrl_c_reports_the_interrupt(monkeypatch, capsys):
    """An import cut short by Ctrl-C leaves a module half made; the error
    its next use raises is reported as the interrupt it came from."""
    import rosetta.cli as cli

    def half_imported(argv, noted):
        # the interrupt swallowed, as code that cleans up after a failed
        # import may, and the half-made module used
        with contextlib.suppress(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        raise AttributeError("partially initialized module 'sympy'")

    monkeypatch.setattr(cli, "run_command", half_imported)
    # Python's own handler, as in a terminal: a shell starts a background job
    # (a CI run started with &) with Ctrl-C ignored, which main leaves alone
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert main(["translate"]) == 130
        assert capsys.readouterr().err == "interrupted\n"
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)


def test_errors_without_ctrl_c_are_not_taken_for_one(monkeypatch):
    import rosetta.cli as cli

    def broken(argv, noted):
        raise AttributeError("a plain bug")

    monkeypatch.setattr(cli, "run_command", broken)
    with pytest.raises(AttributeError, match="a plain bug"):
        main(["translate"])
