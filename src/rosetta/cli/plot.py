"""``rosetta plot attention | positions | curves``."""

from __future__ import annotations

import argparse
from pathlib import Path

from rosetta.cli.flags import add_engine_flags, add_overwrite_flag, add_search_flags
from rosetta.errors import RosettaError
from rosetta.runtime.limits import Count, Size, flag, number_flag
from rosetta.runtime.outputs import claim_file, record_written
from rosetta.runtime.resources import refuse_beyond_memory

PLOT = "rosetta plot"


def cmd_plot(args: argparse.Namespace) -> None:
    from rosetta.cli.common import load_translator, search_options
    from rosetta.jobs import plots

    inputs = [getattr(args, name, None) for name in ("model", "run_dir")]
    output = claim_file(
        plots.check_format(args.output),
        inputs=[path for path in inputs if path],
        overwrite=args.overwrite,
        what=PLOT,
    )
    if args.figure == "attention":
        translator = load_translator(args, [args.model])
        options = search_options(args, need_attention=True)
        [found] = translator.translate_nbest([args.sentence], options)
        if not found:
            raise RosettaError("plot attention: the sentence is blank")
        written = plots.plot_attention(found[0], args.output, args.layer, args.head)
        print(f"{written}: {found[0].text}")
    elif args.figure == "positions":
        # the table, and the image's pixels drawn from it (a few per value)
        table = f"a table of {args.length:,} x {args.d_model:,} positions"
        refuse_beyond_memory(16 * args.length * args.d_model, table)
        written = plots.plot_positional_encoding(
            args.output, args.d_model, args.length, args.dims
        )
        print(written)
    else:
        print(plots.plot_learning_curves(Path(args.run_dir), args.output))
    record_written(output, PLOT)


def add_parser(verbs: argparse._SubParsersAction) -> None:
    plot = verbs.add_parser("plot", help="draw attention, positions or learning curves")
    figures = plot.add_subparsers(dest="figure", required=True)
    attention = figures.add_parser(
        "attention", help="cross-attention of one translated sentence"
    )
    attention.add_argument(
        "-m", "--model", required=True, help="run folder or checkpoint folder"
    )
    attention.add_argument("sentence", help="the source sentence")
    attention.add_argument(
        "--layer", default="last", help="1-based layer, 'last' or 'all'"
    )
    attention.add_argument(
        "--head", default="mean", help="1-based head, 'mean' or 'all'"
    )
    add_engine_flags(attention)
    add_search_flags(attention)
    positions = figures.add_parser(
        "positions", help="the sinusoidal positional encoding and its curves"
    )
    number_flag(positions, "--d-model", Count, "encoding width", default=64)
    number_flag(positions, "--length", Count, "positions", default=100)
    positions.add_argument(
        "--dims",
        type=flag(Size),
        nargs="+",
        default=None,
        help="curves to draw (4 5 6 7)",
    )
    curves = figures.add_parser(
        "curves", help="loss, validation BLEU and learning rate of a training run"
    )
    curves.add_argument(
        "run_dir", metavar="RUN", help="run folder or its metrics.jsonl"
    )
    for figure in (attention, positions, curves):
        figure.add_argument(
            "-o", "--output", required=True, type=Path, help="file: .png, .svg, .pdf"
        )
        add_overwrite_flag(figure, "an existing image")
    plot.set_defaults(run=cmd_plot)
