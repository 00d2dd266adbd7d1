"""A machine busy with other work, for benchmarks' ``--busy N`` rows: N
CPU-bound processes running beside the measurement."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager


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
