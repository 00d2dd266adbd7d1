"""``rosetta evaluate``: BLEU, sacreBLEU and chrF of translations, given or made."""

from __future__ import annotations

import argparse

from rosetta.cli.common import (
    add_precision_flag,
    add_search_flags,
    read_input_lines,
    search_options,
)
from rosetta.errors import RosettaError
from rosetta.evaluate.corpus import evaluate_all
from rosetta.translator import Translator


def cmd_evaluate(args: argparse.Namespace) -> None:
    references = read_input_lines([args.ref])
    if args.model:
        if not args.src:
            raise RosettaError("--model needs --src, the sentences to translate")
        translator = Translator.load(
            args.model, device=args.device, precision=args.precision
        )
        options = search_options(args, "evaluate")
        hypotheses = translator.translate(read_input_lines([args.src]), options)
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
    evaluate.add_argument("--device", default=None)
    add_precision_flag(evaluate)
    evaluate.set_defaults(run=cmd_evaluate)
