"""``rosetta demo`` (``make demo``): train the bundled default for a fixed
number of updates, translate Multi30k test_2016, score it, show a few
translations and what to try next (``rosetta.jobs.demo``)."""

from __future__ import annotations

import argparse

from rosetta.jobs.demo_budget import CPU_STEPS, DEFAULT_CONFIG
from rosetta.runtime.limits import Count, number_flag


def cmd_demo(args: argparse.Namespace) -> None:
    from rosetta.jobs.demo import run_demo

    run_demo(args.config, args.steps, args.device, args.output, args.set, args.fresh)


def add_parser(verbs: argparse._SubParsersAction) -> None:
    demo = verbs.add_parser(
        "demo",
        help="train the bundled default briefly, translate and score its test set",
        description="Train the bundled default for a fixed number of updates, "
        "translate Multi30k test_2016, score it, show a few translations and "
        "what to try next.",
    )
    demo.add_argument(
        "--config", default=DEFAULT_CONFIG, help="configuration with a test set"
    )
    number_flag(
        demo,
        "--steps",
        Count,
        f"updates to train; default {CPU_STEPS} on a CPU, the config's whole "
        "schedule on a GPU",
    )
    demo.add_argument(
        "--device",
        default="auto",
        choices=["auto", "cpu", "cuda"],
        help="auto: a GPU when there is one",
    )
    demo.add_argument("--output", default="runs/demo", help="run folder")
    demo.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config value, e.g. model.positions=relative",
    )
    demo.add_argument(
        "--fresh",
        action="store_true",
        help="replace the run folder if it exists (else a new one is used)",
    )
    demo.set_defaults(run=cmd_demo)
