"""``rosetta average``: one checkpoint from the mean of a run's last ones."""

from __future__ import annotations

import argparse
from pathlib import Path

from rosetta.average import average_run


def cmd_average(args: argparse.Namespace) -> None:
    folders = average_run(Path(args.model), args.last, Path(args.output))
    names = ", ".join(folder.name for folder in folders)
    print(f"{args.output}: the average of {names}")


def add_parser(verbs: argparse._SubParsersAction) -> None:
    average = verbs.add_parser(
        "average", help="average the weights of a run's last checkpoints"
    )
    average.add_argument("-m", "--model", required=True, help="run folder")
    average.add_argument(
        "--last", type=int, default=5, help="how many checkpoints (default 5)"
    )
    average.add_argument(
        "-o", "--output", required=True, help="checkpoint folder to write"
    )
    average.set_defaults(run=cmd_average)
