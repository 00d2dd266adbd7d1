"""``rosetta distill``: a corpus translated by a teacher, for a student."""

from __future__ import annotations

import argparse
import hashlib
import sys
from dataclasses import asdict, replace
from pathlib import Path

from rosetta.cli.flags import (
    add_batching_flags,
    add_engine_flags,
    add_overwrite_flag,
    add_search_flags,
)
from rosetta.data.corpus import read_lines
from rosetta.errors import RosettaError
from rosetta.runs.integrity import META_DIGEST, sha256_file
from rosetta.runtime.limits import Count, number_flag
from rosetta.runtime.outputs import claim_file, record_written
from rosetta.runtime.stopping import said_on_sigterm

DISTILL_BEAM = 5
DISTILL = "rosetta distill"


def teacher_identity(model: Path) -> str:
    """A digest that changes whenever the teacher's weights, config or
    tokenizers do: a run's best checkpoint moves on as it trains."""
    from rosetta.jobs.exports import export_format_of
    from rosetta.runs import checkpoint as ckpt

    if export_format_of(model) is not None:  # another engine's export
        digest = hashlib.sha256()
        for path in sorted(model.iterdir()):
            if path.is_file():  # streamed: model.bin may be large
                digest.update(f"{path.name}\0{sha256_file(path)}\n".encode())
        return digest.hexdigest()
    return ckpt.read_meta(ckpt.resolve_checkpoint(model))[META_DIGEST]


def kept_lines(partial: Path) -> str:
    """What a stopped distillation keeps: the chunks it finished, in
    ``partial``, which the same command carries on from."""
    if partial.is_file() and partial.stat().st_size:
        return (
            f"the lines finished so far are kept in {partial}: the same "
            "command again carries on from them"
        )
    return "no line was finished yet: run the same command again"


def cmd_distill(args: argparse.Namespace) -> None:
    from rosetta.cli.common import decoding_workers, load_translator, search_options
    from rosetta.jobs.distill import check_partial, distill, partial_paths, started_with

    options = search_options(args)
    if args.beam_size is None and not options.sample:
        options = replace(options, beam_size=DISTILL_BEAM)
    src, model = Path(args.src), Path(args.model)
    output = claim_file(
        args.output, inputs=[src, model], overwrite=args.overwrite, what=DISTILL
    )
    for path in partial_paths(output):  # ours only with their record (distill)
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise RosettaError(f"{path}: not a regular file; move it")
    sources = [line for _, line in read_lines(src)]
    what = {  # a resumed run must continue with the same of each (the
        # teacher by its digest, not its path: a moved folder is the same)
        "teacher_sha256": teacher_identity(model),
        "engine": args.engine,
        "precision": args.precision,
        "search": asdict(replace(options, need_attention=False)),
    }
    check_partial(output, started_with(sources, what))  # before the teacher loads
    with said_on_sigterm(lambda: kept_lines(partial_paths(output)[0])):
        translator = load_translator(args, [args.model])
        workers = decoding_workers(args, translator, options)
        count = distill(
            translator,
            sources,
            output,
            options,
            what=what,
            chunk_lines=args.chunk_lines,
            batch_size=args.batch_size,
            workers=workers,
        )
    record_written(output, DISTILL)
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
    add_overwrite_flag(verb, "a file that exists")
    number_flag(
        verb,
        "--chunk-lines",
        Count,
        "lines translated between two writes to OUTPUT.partial: what a "
        "stopped run loses at most",
        default=1000,
    )
    add_batching_flags(verb)
    add_engine_flags(verb)
    verb.set_defaults(run=cmd_distill)
