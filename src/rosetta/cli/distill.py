"""``rosetta distill``: a corpus translated by a teacher, for a student."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, replace
from pathlib import Path

from rosetta.cli.common import (
    add_engine_flags,
    add_search_flags,
    load_translator,
    search_options,
    workers_count,
)
from rosetta.data.corpus import read_lines
from rosetta.decode.batched import check_workers
from rosetta.distill import distill
from rosetta.errors import RosettaError

DISTILL_BEAM = 5


def cmd_distill(args: argparse.Namespace) -> None:
    options = search_options(args, "distill")
    if args.beam_size is None and not options.sample:
        options = replace(options, beam_size=DISTILL_BEAM)
    translator = load_translator(args)
    try:
        check_workers(args.workers, options, translator.device)
    except ValueError as error:
        raise RosettaError(f"distill: {error}") from None
    sources = [line for _, line in read_lines(Path(args.src))]
    output = Path(args.output)
    what = {
        "teacher": str(Path(args.model).resolve()),
        "search": asdict(replace(options, need_attention=False)),
    }
    count = distill(
        translator,
        sources,
        output,
        options,
        what=what,
        chunk_lines=args.chunk_lines,
        batch_size=args.batch_size,
        workers=args.workers,
    )
    print(f"{output}: {len(sources)} lines ({count} translated now)", file=sys.stderr)


def add_parser(verbs: argparse._SubParsersAction) -> None:
    verb = verbs.add_parser(
        "distill",
        help="translate a training corpus with a teacher model (beam search), "
        "for a student to train on; resumable",
    )
    verb.add_argument("-m", "--model", required=True, help="the teacher: a run folder")
    verb.add_argument("--src", required=True, help="source file, one sentence a line")
    verb.add_argument(
        "-o", "--output", required=True, help="the teacher's translations"
    )
    add_search_flags(verb, beam=str(DISTILL_BEAM))
    verb.add_argument(
        "--chunk-lines",
        type=int,
        default=1000,
        help="lines translated between two writes to OUTPUT.partial: what a "
        "stopped run loses at most",
    )
    verb.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="sentences per batch (default: the model's decode.batch_size)",
    )
    verb.add_argument(
        "--workers",
        type=workers_count,
        default="auto",
        help="CPU: decode this many batches at once (auto: one per thread)",
    )
    add_engine_flags(verb)
    verb.set_defaults(run=cmd_distill)
