"""Does ``train.max_minutes`` hold? Training runs with a minutes budget, idle
and beside ``--busy N`` CPU-bound processes.

Each run is ``rosetta train CONFIG --set train.max_minutes=M`` as a user
starts it, with validation every ``--validate-every`` updates (often, so
that validation weighs on the budget). The table gives the minutes the run
recorded (its last checkpoint's clock: updates, validation and checkpoints),
the wall time of the whole command (start-up and data preparation
included, which the budget does not cover), and the overrun of each over
the budget.

    python benchmarks/budget_overrun.py --minutes 3 --busy 2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import ROOT, competing_load

CONFIGS = {
    "language model": ROOT / "configs" / "tinyshakespeare-char-xl-cpu.yaml",
    "translation": ROOT / "configs" / "multi30k-de-en-transformer.yaml",
}


def train(config: Path, run_dir: Path, minutes: float, every: int) -> float:
    """Trains for ``minutes``; the command's wall seconds."""
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable, "-m", "rosetta.cli", "train", str(config),
            "-o", str(run_dir),
            "--set", f"train.max_minutes={minutes}",
            "--set", "train.max_epochs=null",
            "--set", "train.max_steps=null",
            "--set", f"train.validate_every={every}",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return time.perf_counter() - start


def recorded_seconds(run_dir: Path) -> float:
    index = json.loads((run_dir / "checkpoints.json").read_text())
    meta = json.loads((run_dir / index["latest"] / "checkpoint.json").read_text())
    return meta["trainer"]["elapsed_seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--busy", type=int, default=2)
    parser.add_argument("--validate-every", type=int, default=100)
    parser.add_argument("--only", choices=sorted(CONFIGS), nargs="+")
    args = parser.parse_args()
    budget = args.minutes * 60
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name in args.only or CONFIGS:
            for busy in (0, args.busy):
                run_dir = Path(folder) / f"{name.replace(' ', '-')}-{busy}"
                with competing_load(busy):
                    wall = train(
                        CONFIGS[name], run_dir, args.minutes, args.validate_every
                    )
                recorded = recorded_seconds(run_dir)
                rows.append((name, busy, recorded, wall))
                print(f"  {name}, busy {busy}: {recorded:.0f} s recorded, "
                      f"{wall:.0f} s wall", flush=True)  # fmt: skip
    print(f"\nbudget {args.minutes:g} min = {budget:.0f} s; validation every "
          f"{args.validate_every} updates")  # fmt: skip
    print("| run | busy | recorded (s) | overrun | command wall (s) | overrun |")
    print("|---|---|---|---|---|---|")
    for name, busy, recorded, wall in rows:
        print(f"| {name} | {busy} | {recorded:.0f} | {recorded / budget - 1:+.1%} | "
              f"{wall:.0f} | {wall / budget - 1:+.1%} |")  # fmt: skip


if __name__ == "__main__":
    main()
