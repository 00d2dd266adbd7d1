"""Data-parallel training on one machine: ``rosetta train --nproc 2`` against
one process, on the bundled Multi30k Transformer config.

Three ways to make the same updates of two batches each: two processes
(DistributedDataParallel over Gloo, one thread each, as torchrun sets them),
one process with ``train.update_freq 2`` on all the threads, and, for
reference, one process with ``update_freq 1`` (updates of one batch, so
half the tokens per update). Each setting is a real ``rosetta train`` run of
``--steps`` updates without validation, in its own run folder (the
tokenizers trained once and copied); settings are interleaved for
``--rounds`` rounds. The table gives the median training tokens/s that the
run logged (rank 0: the whole update's tokens over its time) with the spread,
and the wall time of the command.

    python benchmarks/data_parallel.py --steps 60 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import ROOT

CONFIG = ROOT / "configs/multi30k-de-en-transformer.yaml"

SETTINGS = {
    "2 processes x 1 batch": (["--nproc", "2"], []),
    "1 process, update_freq 2": ([], ["train.update_freq=2"]),
    "1 process, update_freq 1": ([], []),
}


def train(run: Path, steps: int, flags: list[str], overrides: list[str]) -> float:
    budget = [
        "train.max_epochs=null",
        f"train.max_steps={steps}",
        f"train.validate_every={10 * steps}",
        "train.log_every=10",
        *overrides,
    ]
    sets = [item for o in budget for item in ("--set", o)]
    command = [
        sys.executable,
        "-m",
        "rosetta.cli",
        "train",
        str(CONFIG),
        "-o",
        str(run),
    ]
    started = time.perf_counter()
    subprocess.run([*command, *sets, *flags], check=True, capture_output=True)
    return time.perf_counter() - started


def logged_speed(run: Path) -> float:
    records = [json.loads(line) for line in (run / "metrics.jsonl").open()]
    speeds = [r["tokens_per_s"] for r in records if r["kind"] == "train"]
    return statistics.median(speeds[1:] or speeds)  # the first includes start-up


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rosetta-ddp-"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "rosetta.cli",
            "prepare",
            str(CONFIG),
            "-o",
            str(work / "prepared"),
        ],
        check=True,
        capture_output=True,
    )
    speeds: dict[str, list[float]] = {name: [] for name in SETTINGS}
    walls: dict[str, list[float]] = {name: [] for name in SETTINGS}
    for round_ in range(args.rounds):
        for name, (flags, overrides) in SETTINGS.items():
            run = work / f"{round_}-{name.replace(' ', '_').replace(',', '')}"
            run.mkdir()
            shutil.copy(work / "prepared" / "tokenizers.json", run)
            walls[name].append(train(run, args.steps, flags, overrides))
            speeds[name].append(logged_speed(run))
            print(
                f"round {round_ + 1}: {name}: {speeds[name][-1]:,.0f} tok/s", flush=True
            )
    print(f"\n{args.steps} updates, {args.rounds} rounds, interleaved\n")
    print("| setting | training tokens/s (median, min-max) | wall s (median) |")
    print("|---|---|---|")
    for name in SETTINGS:
        s = speeds[name]
        print(
            f"| {name} | {statistics.median(s):,.0f} ({min(s):,.0f}-{max(s):,.0f}) "
            f"| {statistics.median(walls[name]):.1f} |"
        )
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
