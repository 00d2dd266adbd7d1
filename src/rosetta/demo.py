"""``python -m rosetta.demo`` (``make demo``): its options; the demo itself
is ``rosetta.jobs.demo``."""

from __future__ import annotations

from rosetta.cli import Parser
from rosetta.errors import RosettaError, one_line
from rosetta.jobs.demo import CPU_STEPS, DEFAULT_CONFIG, run_demo


def main(argv: list[str] | None = None) -> None:
    parser = Parser(
        prog="python -m rosetta.demo",
        description="Train the bundled default for a fixed number of updates, "
        "translate Multi30k test_2016, score it, show a few translations and "
        "what to try next.",
    )
    parser.add_argument(
        "--config",
        default=DEFAULT_CONFIG,
        help="configuration with a test set",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help=f"updates to train; default {CPU_STEPS} on a CPU, the config's "
        "whole schedule on a GPU",
    )
    parser.add_argument(
        "--device",
        default="auto",
        choices=["auto", "cpu", "cuda"],
        help="auto: a GPU when there is one",
    )
    parser.add_argument("--output", default="runs/demo", help="run folder")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config value, e.g. model.positions=relative",
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="replace the run folder if it exists (else a new one is used)",
    )
    args = parser.parse_args(argv)

    run_demo(args.config, args.steps, args.device, args.output, args.set, args.fresh)


if __name__ == "__main__":
    try:
        main()
    except RosettaError as error:
        raise SystemExit(f"rosetta demo: error: {one_line(error)}") from None
