"""``rosetta export ctranslate2``: a trained Transformer for another engine."""

from __future__ import annotations

import argparse
from pathlib import Path

from rosetta.cli.common import add_overwrite_flag
from rosetta.families.transformer.ctranslate2.export import (
    QUANTIZATIONS,
    export_ctranslate2,
)


def cmd_export(args: argparse.Namespace) -> None:
    folder = export_ctranslate2(
        Path(args.model), Path(args.output), args.quantization, args.overwrite
    )
    print(f"{args.output}: CTranslate2 model of {folder}")


def add_parser(verbs: argparse._SubParsersAction) -> None:
    export = verbs.add_parser("export", help="export a model to another engine")
    engines = export.add_subparsers(dest="engine", required=True)
    ct2 = engines.add_parser(
        "ctranslate2",
        help="a CTranslate2 model and the tokenizers (pip install 'rosetta[ct2]')",
    )
    ct2.add_argument(
        "-m", "--model", required=True, help="run folder (its best) or checkpoint"
    )
    ct2.add_argument("-o", "--output", required=True, help="folder to write")
    ct2.add_argument(
        "--quantization",
        choices=QUANTIZATIONS,
        default=None,
        help="weight type (default: float32)",
    )
    add_overwrite_flag(ct2, "an earlier export")
    ct2.set_defaults(run=cmd_export)
