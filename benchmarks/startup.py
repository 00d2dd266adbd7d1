"""How long the command line takes before it does anything: ``rosetta
--help``, ``rosetta translate --help``, a mistyped option, and, with
``--model``, one sentence through ``rosetta translate`` (import, load,
translate one line) and the same line translated in Python with the model
already loaded (what is left once start-up is paid).

Each command is a fresh process, as a user runs it; the commands are
interleaved over ``--repeats`` rounds; medians with the lowest and highest.
``--busy N`` runs N CPU-bound processes beside them, as on a busy machine.
``--src`` measures other source trees the same way, interleaved with this
one (an earlier commit checked out elsewhere: its ``src`` folder).

    python benchmarks/startup.py --model runs/demo [--repeats 7] [--busy 2]
    python benchmarks/startup.py --model runs/demo --src /tmp/before/src
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from contextlib import nullcontext

from harness import ROOT, competing_load, spread, write_json

SENTENCE = "Ein Hund läuft im Schnee."


def commands(model: str | None) -> dict[str, list[str]]:
    rosetta = [sys.executable, "-m", "rosetta"]
    found = {
        "rosetta --help": [*rosetta, "--help"],
        "rosetta translate --help": [*rosetta, "translate", "--help"],
        "a mistyped option": [*rosetta, "translate", "-m", "x", "--beams", "5"],
        "import torch (for scale)": [sys.executable, "-c", "import torch"],
    }
    if model:
        found["one sentence through translate"] = [
            *rosetta,
            "translate",
            "-m",
            model,
            "--threads",
            "1",
        ]
    return found


def seconds(command: list[str], src: str) -> float:
    environment = {**os.environ, "PYTHONPATH": src}
    began = time.perf_counter()
    subprocess.run(
        command,
        input=SENTENCE,
        text=True,
        capture_output=True,
        env=environment,
        cwd=ROOT,
        check=False,
    )
    return time.perf_counter() - began


def in_process(model: str) -> float:
    """One sentence translated by a model loaded before the clock starts."""
    sys.path.insert(0, str(ROOT / "src"))
    import rosetta

    translator = rosetta.load(model)
    translator.translate([SENTENCE])  # warm
    began = time.perf_counter()
    translator.translate([SENTENCE])
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a run (its best checkpoint) to translate with")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--busy", type=int, default=0, help="competing processes")
    parser.add_argument("--src", nargs="*", default=[], help="other source trees")
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()
    runs = commands(args.model)
    trees = [str(ROOT / "src"), *args.src]
    times = {(name, tree): [] for name in runs for tree in trees}
    with competing_load(args.busy) if args.busy else nullcontext():
        for _ in range(args.repeats):
            for name, command in runs.items():
                for tree in trees:
                    times[name, tree].append(seconds(command, tree))
        warm = [in_process(args.model) for _ in range(3)] if args.model else []
    print(f"{os.cpu_count()} cores, {args.busy} competing processes")
    print("| what | source tree | seconds, median (lowest–highest) |")
    print("|---|---|---|")
    for (name, tree), values in times.items():
        print(f"| {name} | {tree} | {spread(values)} |")
    if warm:
        print(f"| the same sentence, model loaded | {trees[0]} | {spread(warm)} |")
    if args.json:
        found = {f"{name} ({tree})": values for (name, tree), values in times.items()}
        write_json(args.json, {"busy": args.busy, "seconds": found, "warm": warm})


if __name__ == "__main__":
    main()
