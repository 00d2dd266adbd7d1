"""What training writes as it goes: ``metrics.jsonl`` and the loss and
throughput of the steps since the last report."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rosetta.runtime.outputs import write_text_atomic


class MetricsLog:
    """``metrics.jsonl``: one JSON record per line, each with its kind
    (``train``, ``valid``) and the step it was made at."""

    def __init__(self, path: Path):
        self.path = path

    def append(self, kind: str, step: int, **values: Any) -> None:
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"kind": kind, "step": step, **values}) + "\n")

    def forget_after(self, step: int) -> None:
        """Drop the records made after ``step`` (a resumed run makes them again)."""
        if not self.path.is_file():
            return
        lines = self.path.read_text(encoding="utf-8").splitlines()
        kept = [line for line in lines if _step(line) <= step]
        write_text_atomic(self.path, "".join(line + "\n" for line in kept))


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
