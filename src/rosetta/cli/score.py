"""``rosetta score``: the log-probability of given source–target pairs
under a model (forced decoding), one output line per pair."""

from __future__ import annotations

import argparse
import json
import sys

from rosetta.cli.flags import (
    DEFAULT,
    add_engine_flags,
    add_models_flags,
    add_overwrite_flag,
)
from rosetta.errors import RosettaError
from rosetta.runtime.limits import Count, number_flag
from rosetta.search.options import KINDS

SCORE = "rosetta score"


def cmd_score(args: argparse.Namespace) -> None:
    from rosetta.cli.common import load_translator, read_input_lines
    from rosetta.inference.pair_scoring import score_pairs
    from rosetta.runtime.atomic import write_text_atomic
    from rosetta.runtime.outputs import claim_file, record_written
    from rosetta.runtime.progress import SentenceProgress
    from rosetta.search.options import SearchOptions

    output = None
    if args.output:
        inputs = [args.src, args.tgt, *args.models]
        output = claim_file(
            args.output, inputs=inputs, overwrite=args.overwrite, what=SCORE
        )
    sources, targets = read_input_lines([args.src]), read_input_lines([args.tgt])
    if len(sources) != len(targets):
        raise RosettaError(
            f"{args.src} has {len(sources)} lines but {args.tgt} has {len(targets)}"
        )
    translator = load_translator(args, args.models, args.ensemble_weights)
    alpha = DEFAULT["alpha"] if args.alpha is None else args.alpha
    options = SearchOptions(alpha=alpha, penalty=args.penalty)
    progress = SentenceProgress(len(sources), "score")
    scores = score_pairs(
        translator,
        sources,
        targets,
        options,
        batch_size=args.batch_size,
        progress=progress.update,
    )
    if args.format == "jsonl":
        lines = [
            json.dumps(found.to_dict(number, args.token_scores))
            for number, found in enumerate(scores, start=1)
        ]
    else:
        lines = [f"{s.score:.6f}\t{s.normalized_score:.6f}" for s in scores]
    text = "".join(line + "\n" for line in lines)
    if output is not None:
        write_text_atomic(output, text)
        record_written(output, SCORE)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    progress.say_summary(sum(len(s.token_scores) for s in scores))


def add_parser(verbs: argparse._SubParsersAction) -> None:
    verb = verbs.add_parser(
        "score",
        help="score given translations: the log-probability of each "
        "source-target pair under a model (forced decoding)",
    )
    add_models_flags(verb, "run or checkpoint folder")
    verb.add_argument("--src", required=True, help="sources, one per line")
    verb.add_argument("--tgt", required=True, help="their translations, one per line")
    verb.add_argument("-o", "--output", help="output file (default: stdout)")
    add_overwrite_flag(verb, "an existing output file")
    verb.add_argument(
        "--format",
        choices=["text", "jsonl"],
        default="text",
        help="text: SCORE<TAB>NORMALISED per line; jsonl: one object per line "
        "with the score, the normalised score and the number of tokens",
    )
    verb.add_argument(
        "--token-scores",
        action="store_true",
        help="jsonl: each target token's log-probability, <eos> last",
    )
    number_flag(
        verb,
        "--alpha",
        KINDS["alpha"],
        "the length normalisation exponent of the normalised score, as beam "
        f"search ranks (default {DEFAULT['alpha']})",
    )
    verb.add_argument(
        "--penalty",
        choices=["power", "gnmt"],
        default=DEFAULT["penalty"],
        help="divide by L^alpha (power) or ((5+L)/6)^alpha (gnmt)",
    )
    number_flag(verb, "--batch-size", Count, "pairs per batch (default: the run's)")
    add_engine_flags(verb)
    verb.set_defaults(run=cmd_score)
