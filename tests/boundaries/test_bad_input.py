"""Every bad input we know of, with the message the user must see.

Each case builds its files, runs one ``rosetta`` command in-process and checks
the exit status (2 for errors) and that standard error names the file, line
and problem; no traceback is ever printed. Accepted inputs (CRLF line ends, a
1 MB line) must succeed with a report instead.
"""

from __future__ import annotations

import hashlib
import json
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from rosetta.cli import main
from rosetta.jobs.training import run_training
from rosetta.runs.checkpoint import FORMAT_VERSION
from rosetta.runs.integrity import seal_meta
from tests.support.toy import toy_config

MARKER = "pwned.txt"


class Payload:
    """Unpickling this creates a file: proof that code ran."""

    def __init__(self, target: Path):
        self.target = target

    def __reduce__(self):
        return (open, (str(self.target), "w"))


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


def prepare_with_train_files(src: bytes | str, tgt: bytes | str) -> Callable:
    def build(tmp: Path) -> list[str]:
        config = config_with(tmp)
        write(tmp, "1.src", src)  # the toy config's training files
        write(tmp, "1.tgt", tgt)
        return ["prepare", config, "-o", str(tmp / "run")]

    return build


def prepare_with_config_text(text: str) -> Callable:
    def build(tmp: Path) -> list[str]:
        return ["prepare", str(write(tmp, "bad.yaml", text)), "-o", str(tmp / "r")]

    return build


def prepare_with_tsv(text: bytes) -> Callable:
    def build(tmp: Path) -> list[str]:
        write(tmp, "pairs.tsv", text)
        config = write(tmp, "tsv.yaml", "data: {train: {tsv: pairs.tsv}}\n")
        return ["prepare", str(config), "-o", str(tmp / "run")]

    return build


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


def set_meta(checkpoint: Path, **changes) -> None:
    meta_path = checkpoint / "checkpoint.json"
    meta = json.loads(meta_path.read_text())
    meta.update(changes)
    meta_path.write_text(json.dumps(meta))


def other_version(tmp: Path, checkpoint: Path) -> Path:
    set_meta(checkpoint, format_version=99)
    return checkpoint


def missing_weights(tmp: Path, checkpoint: Path) -> Path:
    (checkpoint / "model.safetensors").unlink()
    return checkpoint


def truncated_weights(tmp: Path, checkpoint: Path) -> Path:
    path = checkpoint / "model.safetensors"
    path.write_bytes(path.read_bytes()[:100])
    return checkpoint


def pickle_as_weights(tmp: Path, checkpoint: Path) -> Path:
    """A malicious pickle where the weights belong, checksum made to match."""
    payload = pickle.dumps({"weights": Payload(tmp / MARKER)})
    (checkpoint / "model.safetensors").write_bytes(payload)
    meta = json.loads((checkpoint / "checkpoint.json").read_text())
    meta["sha256"]["model.safetensors"] = hashlib.sha256(payload).hexdigest()
    (checkpoint / "checkpoint.json").write_text(json.dumps(seal_meta(meta)))
    return checkpoint


def pickle_file_as_model(tmp: Path, checkpoint: Path) -> Path:
    return write(tmp, "model.pkl", pickle.dumps(Payload(tmp / MARKER)))


def torch_file_as_model(tmp: Path, checkpoint: Path) -> Path:
    """A real ``torch.save`` file whose unpickling would run code."""
    import torch

    torch.save({"state_dict": Payload(tmp / MARKER)}, tmp / "model.pt")
    return tmp / "model.pt"


def torch_file_as_weights(tmp: Path, checkpoint: Path) -> Path:
    torch_file_as_model(tmp, checkpoint)
    payload = (tmp / "model.pt").read_bytes()
    (checkpoint / "model.safetensors").write_bytes(payload)
    meta = json.loads((checkpoint / "checkpoint.json").read_text())
    meta["sha256"]["model.safetensors"] = hashlib.sha256(payload).hexdigest()
    (checkpoint / "checkpoint.json").write_text(json.dumps(seal_meta(meta)))
    return checkpoint


CASES = [
    Case(
        "parallel files of different lengths",
        prepare_with_train_files("a b\nc d\n", "A B\n"),
        "1.src has 2 lines but {tmp}/1.tgt has 1",
    ),
    Case(
        "invalid UTF-8",
        prepare_with_train_files(b"a b\nc \xff d\n", "A B\nC D\n"),
        "1.src:2: invalid UTF-8 at byte 2",
    ),
    Case(
        "TSV line without a tab",
        prepare_with_tsv(b"a b\tA B\nno tab here\n"),
        "pairs.tsv:2: no tab found",
    ),
    Case("empty corpus", prepare_with_train_files("", ""), "1.src: empty corpus"),
    Case(
        "every pair filtered out",
        overridden("data.max_len=1"),
        "every pair was filtered out",
    ),
    Case(
        "CRLF line ends are accepted",
        prepare_with_train_files("a b\r\nc d\r\n", "A B\r\nC D\r\n"),
        "",
        status=0,
    ),
    Case(
        "a 1 MB single line is filtered, not a crash",
        prepare_with_train_files(
            "alpha beta\n" + "gamma " * 170_000 + "\n", "ALPHA BETA\nG\n"
        ),
        "",
        status=0,
    ),
    Case(
        "missing file",
        overridden("data.train.src=absent.src"),
        "absent.src: file not found",
    ),
    Case(
        "missing config",
        lambda tmp: ["train", str(tmp / "nowhere" / "c.yaml")],
        "c.yaml: config file not found",
    ),
    Case(
        "unknown config key",
        overridden("train.lrate=0.1"),
        "train.lrate: unknown key",
    ),
    Case(
        "wrong type",
        overridden("train.batch_tokens=many"),
        "train.batch_tokens: Input should be a valid integer",
    ),
    Case(
        "negative size",
        overridden("model.d_model=-8"),
        "model.d_model: Input should be greater than 0",
    ),
    Case(
        "heads not dividing the width",
        overridden("model.heads=5"),
        "heads (5) must divide d_model (32)",
    ),
    Case(
        "options of the other architecture",
        overridden("model.hidden_size=64"),
        "model.hidden_size: unknown key for arch 'transformer'",
    ),
    Case(
        "config that is not YAML",
        prepare_with_config_text("data: [unclosed\n"),
        "bad.yaml:2:1: not valid YAML: expected ',' or ']', but got '<stream end>'",
    ),
    Case(
        "missing model folder",
        lambda tmp: ["translate", "-m", str(tmp / "no-model"), "-i", "-"],
        "no-model: no such model file or folder",
    ),
    Case(
        "model from another format version",
        model_case(other_version),
        f"checkpoint format 99, this Rosetta reads {FORMAT_VERSION}",
    ),
    Case(
        "model with missing files",
        model_case(missing_weights),
        "model.safetensors: missing from the checkpoint",
    ),
    Case(
        "truncated weights",
        model_case(truncated_weights),
        "checksum mismatch (truncated or corrupted)",
    ),
    Case(
        "a pickle where the weights belong is never unpickled",
        model_case(pickle_as_weights),
        "model.safetensors: cannot load weights",
    ),
    Case(
        "a pickle file given as the model is refused",
        model_case(pickle_file_as_model),
        "model.pkl: neither a checkpoint nor a run with checkpoints",
    ),
    Case(
        "a torch.save .pt file given as the model is refused",
        model_case(torch_file_as_model),
        "model.pt: neither a checkpoint nor a run with checkpoints",
    ),
    Case(
        "a torch.save file where the weights belong is never unpickled",
        model_case(torch_file_as_weights),
        "model.safetensors: cannot load weights",
    ),
    Case(
        "translate input with invalid UTF-8",
        model_case(lambda tmp, checkpoint: checkpoint, b"ok\n\xc3\x28\n"),
        "in.txt:2: invalid UTF-8 at byte 0",
    ),
    Case(
        "a 1 MB line to translate is truncated with a warning",
        model_case(lambda tmp, checkpoint: checkpoint, b"alpha " * 170_000 + b"\n"),
        "warning: input of 170000 tokens truncated to 63 (model.max_positions)",
        status=0,
    ),
    Case(
        "search options that cannot work together",
        lambda tmp: ["translate", "-m", str(tmp), "--nbest", "3", "-i", "-"],
        "--nbest and --attention need --format jsonl",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_gets_a_clear_error(case, tmp_path, capsys, recwarn):
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


def test_a_1mb_line_is_reported_as_filtered(tmp_path, capsys):
    build = prepare_with_train_files(
        "alpha beta\n" + "gamma " * 170_000 + "\n", "A\nG\n"
    )
    assert main(build(tmp_path)) == 0
    assert "1 of 2 pairs kept (1 longer than 128 tokens)" in capsys.readouterr().out


def run_refused(argv: list[str], capsys, expected: str) -> None:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err, err
    assert "Traceback" not in err


def test_a_config_that_is_not_utf8_or_nested_without_end_is_one_line(tmp_path, capsys):
    utf16 = write(tmp_path, "utf16.yaml", "train: {lr: 0.1}\n".encode("utf-16"))
    run_refused(["train", str(utf16)], capsys, "not UTF-8 (invalid byte at 0)")
    deep = write(tmp_path, "deep.yaml", "[" * 20_000 + "]" * 20_000)
    run_refused(["train", str(deep)], capsys, "nested too deeply to be a config")


def test_a_device_that_does_not_exist_is_named(toy_run, capsys):
    argv = ["translate", "-m", str(toy_run("transformer")), "--device", "quantum"]
    run_refused([*argv, "-i", "/dev/null"], capsys, "device 'quantum': use auto")


def test_closed_standard_input_and_a_full_disk_are_one_line(toy_run):
    import subprocess
    import sys

    command = [sys.executable, "-m", "rosetta.cli", "translate"]
    command += ["-m", str(toy_run("transformer"))]
    closed = subprocess.run(
        command,
        stdin=None,
        capture_output=True,
        text=True,
        close_fds=True,
        preexec_fn=lambda: __import__("os").close(0),
    )
    assert closed.returncode == 2, closed.stderr
    assert "standard input is closed" in closed.stderr
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            command, input="alpha\n", stdout=full, stderr=subprocess.PIPE, text=True
        )
    assert result.returncode == 2, result.stderr
    assert "<stdout>: not written (No space left on device)" in result.stderr
    assert "Traceback" not in result.stderr + closed.stderr


def test_a_damaged_ctranslate2_export_is_one_line(toy_run, tmp_path, capsys):
    pytest.importorskip("ctranslate2")
    export = tmp_path / "ct2"
    argv = ["export", "ctranslate2", "-m", str(toy_run("transformer"))]
    assert main([*argv, "-o", str(export)]) == 0
    vocabulary = export / "shared_vocabulary.json"
    pieces = json.loads(vocabulary.read_text())
    pieces[4], pieces[5] = pieces[5], pieces[4]
    vocabulary.write_text(json.dumps(pieces))
    translate = ["translate", "-m", str(export), "--engine", "ctranslate2"]
    translate += ["-i", "/dev/null"]
    run_refused(translate, capsys, "not the vocabulary of the tokenizers")
    (export / "model.bin").unlink()
    run_refused(translate, capsys, "CTranslate2 cannot load this export")


def test_a_run_without_a_checkpoint_yet_says_so(tmp_path, capsys):
    """A run prepared (or training, before its first validation) is not
    called "neither a checkpoint nor a run": it is a run with none yet."""
    from rosetta.cli import main
    from tests.support.toy import toy_config_file

    config = toy_config_file(tmp_path)
    run = tmp_path / "run"
    assert main(["prepare", str(config), "-o", str(run)]) == 0
    (tmp_path / "in.txt").write_text("alpha\n")
    capsys.readouterr()
    command = ["translate", "-m", str(run), "-i", str(tmp_path / "in.txt")]
    assert main(command) == 2
    error = capsys.readouterr().err
    assert "a run with no checkpoint yet" in error
    assert "train.validate_every" in error


def test_a_redirected_training_log_holds_no_cursor_movements(tmp_path, capsys):
    """The validation bar sits beneath the training bar on a terminal only:
    in a log file (standard error not a terminal) it would leave the escape
    codes that move the cursor up."""
    from rosetta.cli import main
    from tests.support.toy import toy_config_file

    config = toy_config_file(tmp_path)
    overrides = ["train.max_epochs=null", "train.max_steps=4", "train.validate_every=2"]
    command = ["train", str(config), "-o", str(tmp_path / "run")]
    assert main([*command, *(f for o in overrides for f in ("--set", o))]) == 0
    log = capsys.readouterr().err
    assert "training" in log and "\x1b[A" not in log
