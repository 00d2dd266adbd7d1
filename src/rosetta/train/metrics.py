"""What training writes as it goes: ``metrics.jsonl`` (and TensorBoard
events), and the loss and throughput of the steps since the last report."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from rosetta.errors import RosettaError
from rosetta.runtime.atomic import write_text_atomic
from rosetta.runtime.own_files import append_own, read_own
from rosetta.train.tensorboard import (
    TENSORBOARD_DIR,
    TensorBoardEvents,
    tensorboard_installed,
)

METRICS_FILE = "metrics.jsonl"
LINE = TypeAdapter(dict[str, Any])  # parses with a bounded nesting depth


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
            kind_differs = path.is_dir() != folder or not (folder or path.is_file())
            if path.is_symlink() or (path.exists() and kind_differs):
                kind = "a folder" if folder else "a file"
                raise RosettaError(
                    f"{path}: the run's log must be {kind} of the run, not a "
                    "link or a FIFO; move it"
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
        try:  # as Rosetta's own file: never through a link, never a FIFO
            lines = read_own(self.path).splitlines()
        except FileNotFoundError:
            return
        kept = [line.decode() for line in lines if _step(line) <= step]
        write_text_atomic(self.path, "".join(line + "\n" for line in kept))

    def close(self) -> None:
        if self.events is not None:
            self.events.close()


def log_record(line: str | bytes) -> dict[str, Any]:
    """A line of the log as its record (a JSON object, nested no deeper
    than the parser allows); ``ValidationError`` if it is not one."""
    return LINE.validate_json(line)


def _step(line: bytes) -> float:
    """A record's step; a line that is not a record with a whole step (cut
    off by a crash mid-write, or edited) counts as after every step, so it
    is dropped."""
    try:
        step = log_record(line).get("step")
    except ValidationError:
        return float("inf")
    whole = isinstance(step, int) and not isinstance(step, bool)
    return step if whole else float("inf")


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
