"""Run ``rosetta train`` and freeze at a chosen point, for a SIGKILL test.

    python tests/support/kill_harness.py POINT MARKER -- train CONFIG -o RUN [...]

POINT is ``KIND:N``; the process writes its pid to MARKER and waits there to be
killed:

- ``step:N``       after the N-th optimizer step (mid-epoch);
- ``validation:N`` inside the N-th validation, after the loss, before BLEU;
- ``write:N``      inside the N-th checkpoint write: weights written to the
                   temporary folder, optimizer and metadata not yet;
- ``index:N``      after the N-th checkpoint is renamed into place, before the
                   index that names it is written;
- ``raise:N``      raise an error after the N-th optimizer step;
- ``term:N``, ``int:N``  send itself SIGTERM / SIGINT after the N-th
                   optimizer step, and go on (the signal ends the run).

Under torchrun, only the process whose rank is ``KILL_RANK`` (default 0)
freezes or raises.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import rosetta.runs.checkpoint as ckpt
import rosetta.train.trainer as trainer_module
import rosetta.train.translation_task as task_module
from rosetta.cli import main


def freeze(marker: Path) -> None:
    marker.write_text(str(os.getpid()))
    while True:
        time.sleep(0.5)


def install(point: str, marker: Path) -> None:
    kind, _, count_text = point.partition(":")
    target = int(count_text)
    calls = {"n": 0}

    def nth() -> bool:
        calls["n"] += 1
        return calls["n"] == target

    if kind == "raise":
        original_step = trainer_module.Trainer.train_step

        def train_step(self, indices):
            outcome = original_step(self, indices)
            if self.state.step == target:
                raise RuntimeError(f"injected failure at step {target}")
            return outcome

        trainer_module.Trainer.train_step = train_step
    elif kind in ("term", "int"):
        original_step = trainer_module.Trainer.train_step
        number = signal.SIGTERM if kind == "term" else signal.SIGINT

        def train_step(self, indices):
            outcome = original_step(self, indices)
            if self.state.step == target:
                marker.write_text(str(os.getpid()))
                os.kill(os.getpid(), number)
            return outcome

        trainer_module.Trainer.train_step = train_step
    elif kind == "step":
        original_step = trainer_module.Trainer.train_step

        def train_step(self, indices):
            outcome = original_step(self, indices)
            if self.state.step == target:
                freeze(marker)
            return outcome

        trainer_module.Trainer.train_step = train_step
    elif kind == "validation":
        original_scores = task_module.decoded_scores

        def decoded_scores(*args, **kwargs):
            if nth():
                freeze(marker)
            return original_scores(*args, **kwargs)

        task_module.decoded_scores = decoded_scores
    elif kind == "write":
        original_save_file = ckpt.save_file

        def save_file(tensors, filename, *args, **kwargs):
            original_save_file(tensors, filename, *args, **kwargs)
            if filename.endswith(ckpt.MODEL_FILE) and nth():
                freeze(marker)

        ckpt.save_file = save_file
    elif kind == "index":
        original_write = ckpt.write_json_atomic

        def write_json_atomic(path, data):
            if path.name == ckpt.INDEX_FILE and nth():
                freeze(marker)
            original_write(path, data)

        ckpt.write_json_atomic = write_json_atomic
    else:
        raise SystemExit(f"unknown kill point {point!r}")


if __name__ == "__main__":
    point, marker_path, separator, *argv = sys.argv[1:]
    assert separator == "--"
    if os.environ.get("RANK", "0") == os.environ.get("KILL_RANK", "0"):
        install(point, Path(marker_path))
    sys.exit(main(argv))
