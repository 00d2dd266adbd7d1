"""The file-system chaos test at scale: many random sequences of writing
commands at random places, some killed at random moments (``tests/support/chaos.py``
says what is drawn and what is checked). Prints one line per violation and
a table: sequences, commands, kills (and how many landed between the two
renames of a folder swap), violations, minutes.

    python benchmarks/chaos_files.py --sequences 500 --steps 4
    python benchmarks/chaos_files.py --sequences 20 --first-seed 1000
    python benchmarks/chaos_files.py --sequences 500 --steps 6 --tampering 0.4

``--src DIR`` tests another copy of Rosetta's ``src/`` (an older commit's,
to see what the generator finds there); where that copy has no journaled
swaps, there is nothing to finish after a kill.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import types
from pathlib import Path

from harness import ROOT


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", type=int, default=500)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument(
        "--tampering",
        type=float,
        default=0.0,
        help="the share of turns the tamperer takes (tests/support/tamper.py), 0 to 1",
    )
    parser.add_argument("--src", help="the src/ folder of the Rosetta to test")
    args = parser.parse_args()
    source = Path(args.src).resolve() if args.src else ROOT / "src"
    sys.path[:0] = [str(source), str(ROOT)]
    if not (source / "rosetta" / "runtime" / "atomic.py").exists():
        stub = types.ModuleType("rosetta.runtime.atomic")  # a Rosetta without
        stub.finish_swap = lambda _: None  # journaled swaps: nothing to finish
        sys.modules[stub.__name__] = stub
    from tests.support import chaos
    from tests.support.toy import toy_config

    chaos.ROOT = source.parent  # the children run the same Rosetta
    import rosetta
    from rosetta.jobs.training import run_training

    print(f"testing {Path(rosetta.__file__).parent}", flush=True)

    started = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        config, config_path = toy_config(
            folder,
            "train.max_epochs=null",
            "train.max_steps=60",
            "train.validate_every=30",
        )
        run_training(config, folder / "run")
        steps = kills = between = violations = 0
        for seed in range(args.first_seed, args.first_seed + args.sequences):
            outcome = chaos.run_sequence(
                folder / "run",
                config_path,
                folder / "work",
                seed,
                args.steps,
                args.tampering,
            )
            steps, kills = steps + outcome.steps, kills + outcome.killed
            between += outcome.between_renames
            violations += len(outcome.violations)
            for line in outcome.violations:
                print(line, flush=True)
    minutes = (time.monotonic() - started) / 60
    print(
        "| sequences | commands | killed | of them between renames | violations "
        "| minutes |"
    )
    print("|---|---|---|---|---|---|")
    print(
        f"| {args.sequences} | {steps} | {kills} | {between} | {violations} "
        f"| {minutes:.1f} |"
    )


if __name__ == "__main__":
    main()
