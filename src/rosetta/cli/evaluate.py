"""``rosetta evaluate``: BLEU, sacreBLEU and chrF of translations, given or made."""

from __future__ import annotations

import argparse

from rosetta.cli.flags import (
    add_batching_flags,
    add_engine_flags,
    add_models_flags,
    add_npd_flags,
    add_overwrite_flag,
    add_search_flags,
)
from rosetta.errors import RosettaError
from rosetta.runtime.atomic import write_text_atomic
from rosetta.runtime.outputs import claim_file, record_written
from rosetta.runtime.progress import SentenceProgress

EVALUATE = "rosetta evaluate"
# ``rosetta.evaluate.corpus.METRICS``'s names, written here: --help loads no torch
METRIC_NAMES = ("bleu", "chrf", "ter", "bleu-tok-lc", "sentence-bleu")


def cmd_evaluate(args: argparse.Namespace) -> None:
    from rosetta.cli.common import (
        decoding_workers,
        load_translator,
        read_input_lines,
        search_options,
    )
    from rosetta.evaluate.corpus import evaluate_all

    references = read_input_lines([args.ref])
    if args.models and args.hyp:
        raise RosettaError(
            "give --hyp FILE (translations to score), or --model MODEL with "
            "--src FILE (translate, then score), not both"
        )
    if args.src and not args.models:
        raise RosettaError("--src goes with --model (the model translates it)")
    if args.output and not args.models:
        raise RosettaError("--output keeps the translations of --model")
    output = None
    if args.models:
        if not args.src:
            raise RosettaError("--model needs --src, the sentences to translate")
        if args.output:  # claimed before the model loads
            inputs = [args.src, args.ref, *args.models]
            output = claim_file(
                args.output, inputs=inputs, overwrite=args.overwrite, what=EVALUATE
            )
        translator = load_translator(args, args.models, args.ensemble_weights)
        options = search_options(args)
        sources = read_input_lines([args.src])
        progress = SentenceProgress(len(sources), "translate")
        found = translator.translate_nbest(
            sources,
            options,
            batch_size=args.batch_size,
            workers=decoding_workers(args, translator, options),
            progress=progress.update,
        )
        hypotheses = [ts[0].text if ts else "" for ts in found]
        if output is not None:
            write_text_atomic(output, "".join(line + "\n" for line in hypotheses))
            record_written(output, EVALUATE)
        progress.say_summary(sum(len(ts[0].token_ids) for ts in found if ts))
    elif args.hyp:
        hypotheses = read_input_lines([args.hyp])
    else:
        raise RosettaError("give --hyp FILE, or --model MODEL with --src FILE")
    if not references:
        raise RosettaError(f"{args.ref}: no lines to score")
    if len(hypotheses) != len(references):
        raise RosettaError(
            f"{len(hypotheses)} hypotheses but {args.ref} has {len(references)} lines"
        )
    for score in evaluate_all(hypotheses, references, args.metrics):
        print(score)


def add_parser(verbs: argparse._SubParsersAction) -> None:
    evaluate = verbs.add_parser(
        "evaluate", help="score translations against references"
    )
    evaluate.add_argument("--hyp", help="translations, one per line")
    evaluate.add_argument("--ref", required=True, help="references, one per line")
    add_models_flags(evaluate, "translate --src with this model first", False)
    evaluate.add_argument("--src", help="source sentences (with --model)")
    evaluate.add_argument(
        "-o", "--output", help="keep the translations of --model in this file"
    )
    evaluate.add_argument(
        "--metrics",
        nargs="+",
        choices=METRIC_NAMES,
        default=list(METRIC_NAMES),
        metavar="METRIC",
        help=f"which scores to print, in this order: {', '.join(METRIC_NAMES)} "
        "(sacreBLEU's BLEU, chrF and TER, whose lower is better; then "
        "lower-cased tokenized BLEU and mean sentence BLEU); default all",
    )
    add_overwrite_flag(evaluate, "an existing output file")
    add_search_flags(evaluate)
    add_batching_flags(evaluate)
    add_npd_flags(evaluate)
    add_engine_flags(evaluate)
    evaluate.set_defaults(run=cmd_evaluate)
