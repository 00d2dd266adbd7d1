"""``rosetta export FORMAT``: a trained model in the format of another
toolkit (each export format a family names, ``Family.exports``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rosetta.cli.flags import add_overwrite_flag
from rosetta.families import all_export_formats


def cmd_export(args: argparse.Namespace) -> None:
    from rosetta.jobs.exports import export_model

    folder = export_model(
        args.engine,
        Path(args.model),
        Path(args.output),
        getattr(args, "quantization", None),
        args.overwrite,
    )
    print(f"{args.output}: {args.engine} model of {folder}")


def add_parser(verbs: argparse._SubParsersAction) -> None:
    export = verbs.add_parser("export", help="export a model for another toolkit")
    formats = export.add_subparsers(dest="engine", required=True)
    for export_format in all_export_formats():
        verb = formats.add_parser(export_format.name, help=export_format.summary)
        verb.add_argument(
            "-m", "--model", required=True, help="run folder (its best) or checkpoint"
        )
        verb.add_argument("-o", "--output", required=True, help="folder to write")
        if export_format.quantizations:
            verb.add_argument(
                "--quantization",
                choices=export_format.quantizations,
                default=None,
                help="weight type (default: float32)",
            )
        add_overwrite_flag(verb, "an earlier export")
        verb.set_defaults(run=cmd_export)
