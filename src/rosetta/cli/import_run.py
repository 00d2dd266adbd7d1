"""``rosetta import NAME SOURCE -o RUN``: a model of another toolkit as a
Rosetta run (each importer a family names, ``Family.importers``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rosetta.cli.flags import add_overwrite_flag
from rosetta.families import all_importers


def cmd_import(args: argparse.Namespace) -> None:
    from rosetta.jobs.importers import import_run

    import_run(args.importer, args.source, Path(args.output), args.overwrite)
    print(f"model: {args.output}")


def add_parser(verbs: argparse._SubParsersAction) -> None:
    verb = verbs.add_parser(
        "import", help="bring in a model trained elsewhere as a Rosetta run"
    )
    kinds = verb.add_subparsers(dest="kind", required=True)
    for importer in all_importers():
        command = kinds.add_parser(importer.name, help=importer.summary)
        command.add_argument("source", metavar="MODEL", help=importer.source)
        command.add_argument(
            "-o", "--output", required=True, help="run folder to write"
        )
        add_overwrite_flag(command, "an earlier import")
        command.set_defaults(run=cmd_import, importer=importer)
