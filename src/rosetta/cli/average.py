"""``rosetta average``: one checkpoint from the mean of a run's last ones."""

from __future__ import annotations

import argparse
from pathlib import Path

from rosetta.cli.flags import add_overwrite_flag
from rosetta.runtime.limits import Count, number_flag


def cmd_average(args: argparse.Namespace) -> None:
    from rosetta.runs.average import average_run

    folders = average_run(
        Path(args.model), args.last, Path(args.output), overwrite=args.overwrite
    )
    names = ", ".join(folder.name for folder in folders)
    print(f"{args.output}: the average of {names}")


def add_parser(verbs: argparse._SubParsersAction) -> None:
    average = verbs.add_parser(
        "average", help="average the weights of a run's last checkpoints"
    )
    average.add_argument("-m", "--model", required=True, help="run folder")
    number_flag(
        average,
        "--last",
        Count,
        "how many of the newest checkpoints (default: every one the run keeps, "
        "train.keep_last)",
    )
    average.add_argument(
        "-o", "--output", required=True, help="checkpoint folder to write"
    )
    add_overwrite_flag(average, "an earlier average")
    average.set_defaults(run=cmd_average)
