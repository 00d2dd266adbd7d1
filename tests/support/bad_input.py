"""What the catalogue of bad inputs shares, boundary by boundary
(``tests/boundaries/test_command_line.py``, ``test_configuration.py``,
``test_input_text.py``, ``run_files/test_checkpoints.py``): a case (the
files it builds, the ``rosetta`` command run in-process, the message
standard error must hold), the builders of its files and commands, and the
check each case must pass: exit status 2 (or the one given), the message,
no traceback, a few lines at most, and no code run by unpickling."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rosetta.cli import main
from rosetta.jobs.training import run_training
from tests.support.toy import toy_config

MARKER = "pwned.txt"


@dataclass
class Case:
    name: str
    build: Callable[[Path], list[str]]  # makes files in tmp, returns argv
    expected: str  # text standard error must contain ("{tmp}" is replaced)
    status: int = 2


def config_with(tmp: Path, *overrides: str) -> str:
    _, path = toy_config(tmp, *overrides)
    return str(path)


def write(tmp: Path, name: str, data: bytes | str) -> Path:
    path = tmp / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def overridden(*overrides: str) -> Callable:
    def build(tmp: Path) -> list[str]:
        flags = [flag for o in overrides for flag in ("--set", o)]
        return ["prepare", config_with(tmp), "-o", str(tmp / "run"), *flags]

    return build


def model_case(
    damage: Callable[[Path, Path], Path], text: bytes = b"alpha beta\n"
) -> Callable:
    """Train a tiny model, damage its checkpoint, then translate ``text``."""

    def build(tmp: Path) -> list[str]:
        config, _ = toy_config(
            tmp, "train.max_epochs=null", "train.max_steps=2", "train.validate_every=2"
        )
        run_training(config, tmp / "run")
        checkpoint = next((tmp / "run").glob("checkpoint-*"))
        model = damage(tmp, checkpoint)
        write(tmp, "in.txt", text)
        return ["translate", "-m", str(model), "-i", str(tmp / "in.txt")]

    return build


def gets_a_clear_error(case: Case, tmp_path: Path, capsys, recwarn) -> None:
    """The case's command, run in this process, keeps the promise."""
    argv = case.build(tmp_path)
    capsys.readouterr()
    recwarn.clear()
    status = main(argv)
    err = capsys.readouterr().err
    # warnings reach stderr as "warning: ..." lines; pytest records them instead
    err += "".join(f"warning: {w.message}\n" for w in recwarn)
    assert status == case.status, err
    assert case.expected.replace("{tmp}", str(tmp_path)) in err
    assert "Traceback" not in err
    if case.status:
        assert err.count("\n") <= 3, err  # a message, not a dump
    assert not (tmp_path / MARKER).exists(), "unpickling ran code"


def run_refused_without_traceback(argv: list[str], capsys, expected: str) -> None:
    """``rosetta ARGV`` exits 2 with ``expected`` on standard error, and no
    traceback (``tests/runtime/test_outputs.py``'s ``run_refused`` counts
    the lines besides)."""
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err, err
    assert "Traceback" not in err
