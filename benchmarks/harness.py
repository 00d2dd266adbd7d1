"""What the benchmarks share: where the repository is, clocks read after a
GPU's queued work, medians with their spread, a machine busy with other work
(``--busy N``), and results written as JSON.

    from harness import ROOT, competing_load, spread, synchronize
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent


def synchronize(device: torch.device | str | None = None) -> None:
    """Wait for the GPU's queued work, so that a clock read after it counts
    that work (a GPU runs asynchronously to the host); nothing on a CPU.
    ``None``: the current GPU, if there is one."""
    if device is None:
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    elif torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


@dataclass(frozen=True)
class Spread:
    """The median of repeated measurements, and the lowest and highest."""

    median: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.median:.3g} ({self.low:.3g}–{self.high:.3g})"


def spread(values: Sequence[float]) -> Spread:
    return Spread(statistics.median(values), min(values), max(values))


@contextmanager
def competing_load(processes: int) -> Iterator[None]:
    """``processes`` CPU-bound processes running beside the measurement, as on
    a machine busy with other work."""
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(processes)
    ]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def write_json(path: str | Path, results: Any) -> None:
    """``results`` as indented JSON at ``path``, its folder made."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1) + "\n")
