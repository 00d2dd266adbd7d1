"""``rosetta prepare | train | translate | evaluate | average | export | serve |
plot``.

Each verb lives in its own module: its ``cmd_*`` function and the parser that
calls it.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from rosetta.cli import average, evaluate, export, plot, serve, train, translate
from rosetta.errors import RosettaError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rosetta", description="Sequence-to-sequence learning for translation."
    )
    verbs = parser.add_subparsers(dest="verb", required=True)
    train.add_parsers(verbs)
    for verb in (translate, evaluate, average, export, serve, plot):
        verb.add_parser(verbs)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    warnings.formatwarning = lambda message, category, *_: f"warning: {message}\n"
    try:
        args.run(args)
    except RosettaError as error:
        print(f"rosetta {args.verb}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0
