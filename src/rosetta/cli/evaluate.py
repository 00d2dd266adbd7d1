"""``rosetta evaluate``: BLEU, sacreBLEU and chrF of translations, given or made."""

from __future__ import annotations

import argparse

from rosetta.cli.flags import (
    add_batching_flags,
    add_engine_flags,
    add_npd_flags,
    add_search_flags,
)
from rosetta.errors import RosettaError


def cmd_evaluate(args: argparse.Namespace) -> None:
    from rosetta.cli.common import (
        decoding_workers,
        load_translator,
        read_input_lines,
        search_options,
    )
    from rosetta.evaluate.corpus import evaluate_all

    references = read_input_lines([args.ref])
    if args.model and args.hyp:
        raise RosettaError(
            "give --hyp FILE (translations to score), or --model MODEL with "
            "--src FILE (translate, then score), not both"
        )
    if args.src and not args.model:
        raise RosettaError("--src goes with --model (the model translates it)")
    if args.model:
        if not args.src:
            raise RosettaError("--model needs --src, the sentences to translate")
        translator = load_translator(args)
        options = search_options(args)
        hypotheses = translator.translate(
            read_input_lines([args.src]),
            options,
            batch_size=args.batch_size,
            workers=decoding_workers(args, translator, options),
        )
    elif args.hyp:
        hypotheses = read_input_lines([args.hyp])
    else:
        raise RosettaError("give --hyp FILE, or --model MODEL with --src FILE")
    if len(hypotheses) != len(references):
        raise RosettaError(
            f"{len(hypotheses)} hypotheses but {args.ref} has {len(references)} lines"
        )
    for score in evaluate_all(hypotheses, references):
        print(score)


def add_parser(verbs: argparse._SubParsersAction) -> None:
    evaluate = verbs.add_parser(
        "evaluate", help="score translations against references"
    )
    evaluate.add_argument("--hyp", help="translations, one per line")
    evaluate.add_argument("--ref", required=True, help="references, one per line")
    evaluate.add_argument("-m", "--model", help="translate --src with this model first")
    evaluate.add_argument("--src", help="source sentences (with --model)")
    add_search_flags(evaluate)
    add_batching_flags(evaluate)
    add_npd_flags(evaluate)
    add_engine_flags(evaluate)
    evaluate.set_defaults(run=cmd_evaluate)
