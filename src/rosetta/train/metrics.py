"""What training writes as it goes: ``metrics.jsonl`` (and TensorBoard
events), and the loss and throughput of the steps since the last report."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rosetta.errors import RosettaError
from rosetta.runtime.atomic import write_text_atomic
from rosetta.runtime.own_files import append_own
from rosetta.train.tensorboard import (
    TENSORBOARD_DIR,
    TensorBoardEvents,
    tensorboard_installed,
)

METRICS_FILE = "metrics.jsonl"


class MetricsLog:
    """``metrics.jsonl``: one JSON record per line, each with its kind
    (``train``, ``valid``) and the step it was made at; ``events``, if any,
    receive every record too (TensorBoard)."""

    def __init__(self, path: Path, events: TensorBoardEvents | None = None):
        self.path, self.events = path, events

    @classmethod
    def for_run(cls, run_dir: Path, tensorboard: bool) -> MetricsLog:
        """The run's log, with TensorBoard events where asked and installed."""
        wanted = tensorboard and tensorboard_installed()
        for path, folder in (
            (run_dir / METRICS_FILE, False),
            (run_dir / TENSORBOARD_DIR, True),
        ):
            if path.is_symlink() or (path.exists() and path.is_dir() != folder):
                kind = "a folder" if folder else "a file"
                raise RosettaError(
                    f"{path}: the run's log must be {kind} of the run, not a "
                    "link; move it"
                )
        events = TensorBoardEvents(run_dir / TENSORBOARD_DIR) if wanted else None
        return cls(run_dir / METRICS_FILE, events)

    def append(self, kind: str, step: int, **values: Any) -> None:
        record = json.dumps({"kind": kind, "step": step, **values})
        append_own(self.path, record + "\n")
        if self.events is not None:
            self.events.add(kind, step, values)

    def examples(self, step: int, examples: list[tuple[str, str, str]]) -> None:
        """A few validation translations, (source, output, reference), as
        TensorBoard text (``metrics.jsonl`` keeps the numbers)."""
        if self.events is not None:
            self.events.add_examples(step, examples)

    def forget_after(self, step: int) -> None:
        """Drop the records made after ``step`` (a resumed run makes them again)."""
        if self.events is not None:
            self.events.forget_after(step)
        if not self.path.is_file():
            return
        lines = self.path.read_text(encoding="utf-8").splitlines()
        kept = [line for line in lines if _step(line) <= step]
        write_text_atomic(self.path, "".join(line + "\n" for line in kept))

    def close(self) -> None:
        if self.events is not None:
            self.events.close()


def _step(line: str) -> float:
    """A record's step; a line cut off by a crash mid-write counts as after
    every step, so it is dropped."""
    try:
        return json.loads(line)["step"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return float("inf")


@dataclass
class Window:
    """The training loss and throughput since the last report."""

    tokens: int = 0
    loss_sum: float = 0.0
    started: float = field(default_factory=time.perf_counter)

    def add(self, loss: float, tokens: int) -> None:
        self.tokens += tokens
        self.loss_sum += loss * tokens

    def mean_loss(self) -> float:
        return self.loss_sum / max(self.tokens, 1)

    def tokens_per_second(self) -> float:
        return self.tokens / max(time.perf_counter() - self.started, 1e-9)
