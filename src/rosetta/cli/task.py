"""``rosetta task NAME -o DIR``: a synthetic task as parallel files."""

from __future__ import annotations

import argparse
from pathlib import Path

from rosetta.cli.common import add_overwrite_flag
from rosetta.data.synthetic import TASK_FILE, TASKS, TaskSpec, parse_band, write_task
from rosetta.runtime.limits import Count, Seed, Size, number_flag
from rosetta.runtime.outputs import atomic_folder, claim_folder


def cmd_task(args: argparse.Namespace) -> None:
    spec = TaskSpec(
        task=args.name,
        lengths=parse_band(args.lengths),
        count=args.count,
        valid=args.valid,
        test=args.test,
        bands=tuple(parse_band(band) for band in args.bands),
        alphabet=list(args.alphabet),
        seed=args.seed,
    )
    output = claim_folder(
        args.output,
        overwrite=args.overwrite,
        ours=lambda folder: (folder / TASK_FILE).is_file(),
        what="a task written by rosetta task",
    )
    with atomic_folder(output) as folder:
        counts = write_task(spec, folder)
    for name, pairs in counts.items():
        print(f"{Path(args.output) / name}.src/.tgt: {pairs} pairs")


def add_parser(verbs: argparse._SubParsersAction) -> None:
    task = verbs.add_parser(
        "task",
        help="write a synthetic task (copy, reverse, sort, duplicate, addition, "
        "addition-lsb) as train/valid/test parallel files",
    )
    task.add_argument("name", choices=TASKS, help="the task")
    task.add_argument("-o", "--output", required=True, help="folder to write")
    task.add_argument(
        "--lengths", default="1-40", help="source lengths of train, valid and test"
    )
    number_flag(task, "--count", Count, "training pairs", default=10000)
    number_flag(task, "--valid", Size, "validation pairs", default=500)
    number_flag(task, "--test", Size, "pairs per test set", default=500)
    task.add_argument(
        "--bands",
        nargs="*",
        default=["41-80", "81-120", "121-200"],
        help="further test sets at these lengths (none: only the training range)",
    )
    task.add_argument(
        "--alphabet",
        default="abcdefghij",
        help="the symbols, one character each (addition uses digits)",
    )
    number_flag(task, "--seed", Seed, "seed of the draws", default=1)
    add_overwrite_flag(task, "a task written before")
    task.set_defaults(run=cmd_task)
