"""``rosetta import NAME SOURCE -o RUN``: a model of another toolkit as a
Rosetta run (each importer a family names, ``Family.importers``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rosetta.cli.flags import add_overwrite_flag
from rosetta.families import all_importers
from rosetta.runtime.stopping import said_on_sigterm


def cmd_import(args: argparse.Namespace) -> None:
    from rosetta.jobs.importers import import_run

    output = Path(args.output)
    kept = unchanged(output)  # said as it is now, before anything is written
    with said_on_sigterm(lambda: kept):
        import_run(args.importer, args.source, output, args.overwrite)
    print(f"model: {args.output}")


def unchanged(output: Path) -> str:
    """What a stopped import leaves: ``output`` as it was, for an import
    fills a temporary folder that takes its place only once loaded back."""
    was = f"{output} is as it was" if output.exists() else "nothing was written"
    return (
        f"{was} (the import fills a temporary folder, now removed): run the "
        "same command again to import the model"
    )


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
