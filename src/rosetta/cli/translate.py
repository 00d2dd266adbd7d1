"""``rosetta translate``: one output line (text or JSON) per input line."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rosetta.cli.flags import (
    add_batching_flags,
    add_engine_flags,
    add_models_flags,
    add_npd_flags,
    add_overwrite_flag,
    add_search_flags,
)
from rosetta.errors import RosettaError
from rosetta.inference.markup import restore_markup, strip_markup
from rosetta.runtime.atomic import write_text_atomic
from rosetta.runtime.limits import Count, number_flag
from rosetta.runtime.outputs import claim_file, record_written
from rosetta.runtime.progress import SentenceProgress

if TYPE_CHECKING:
    from rosetta.inference.translation import Translation

TRANSLATE = "rosetta translate"


def cmd_translate(args: argparse.Namespace) -> None:
    from rosetta.inference.language_check import LanguageCheck

    # first: its model is read on another core while PyTorch and the model load
    check = LanguageCheck(not args.no_language_check)
    from rosetta.cli.common import decoding_workers, load_translator, search_options
    from rosetta.inference.constraints import read_constraints_file
    from rosetta.runs.unfinished import refuse_missing

    if args.format == "text" and args.attention:
        raise RosettaError("--attention needs --format jsonl")
    if args.format == "text" and args.nbest > 1 and args.alignment:
        raise RosettaError("--nbest with --alignment needs --format jsonl")
    output = None
    if args.output:
        inputs = [*args.input, *args.models]
        output = claim_file(
            args.output, inputs=inputs, overwrite=args.overwrite, what=TRANSLATE
        )
    for path in args.input:  # a missing file is said before the model loads
        if path != "-" and not Path(path).exists():
            raise RosettaError(f"{path}: file not found")
    if args.sample and (args.alignment or args.markup):
        raise RosettaError(
            "--alignment and --markup read the attention of greedy or beam "
            "search, not of sampling"
        )
    for model in args.models:  # said before the input is read
        refuse_missing(Path(model))
    constraints = None
    lines, origins = numbered_lines(args.input)  # before the model loads
    if args.constraints is not None:
        constraints = read_constraints_file(args.constraints, len(lines))
    shown, tags = lines, None
    if args.markup:  # the tags come out before translating, and go back after
        lines, tags = without_markup(lines, origins)
    translator = load_translator(args, args.models, args.ensemble_weights)
    source = translator.expected_source
    detected, said = check.checked(lines, source)
    if said:
        print(said, file=sys.stderr)
    options = search_options(args, need_attention=args.attention)
    workers = decoding_workers(args, translator, options)
    progress = SentenceProgress(len(lines), "translate")
    results = translator.translate_nbest(
        lines,
        options,
        batch_size=args.batch_size,
        workers=workers,
        constraints=constraints,
        alignment=args.alignment or args.markup,
        progress=progress.update,
    )
    if tags is not None:
        for number, (found, line_tags) in enumerate(zip(results, tags, strict=True)):
            if not found and line_tags:  # a line of tags alone keeps them
                results[number] = [tags_alone(line_tags)]
            for translation in found:
                translation.text = restore_markup(
                    translation.text, translation.alignment or "", line_tags
                )
                translation.alignment = (
                    translation.alignment if args.alignment else None
                )
    warn_of_results(results, lines, constraints)
    outputs = formatted_results(args, shown, results, detected)
    text = "".join(line + "\n" for line in outputs)
    if output is not None:
        write_text_atomic(output, text)
        record_written(output, TRANSLATE)
        progress.say_summary(tokens_written(results))
    else:  # bytes, so the locale's encoding can never fail on a translation
        try:
            sys.stdout.buffer.write(text.encode("utf-8"))
            sys.stdout.flush()
        except BrokenPipeError:
            raise
        except OSError as error:  # a full disk behind a redirection
            raise RosettaError(f"<stdout>: not written ({error.strerror})") from None
        progress.say_summary(tokens_written(results))


def tokens_written(results: list[list[Translation]]) -> int:
    """The target tokens of the best translations: what a speed counts."""
    return sum(len(found[0].token_ids) for found in results if found)


def warn_of_results(results: list, lines: list[str], constraints: list | None) -> None:
    """One warning line for each kind of line that did not come out whole:
    stopped short, constraints unmet, constraints of blank lines unused."""
    short = sum(1 for found in results if found and not found[0].complete)
    if short:  # said where it is seen, whatever the warning filters
        print(
            f"warning: {short} of {len(lines)} lines stop short: the search "
            'controls left no token to go on with ("complete": false in '
            "--format jsonl)",
            file=sys.stderr,
        )
    unmet = sum(1 for found in results if found and found[0].constraints_met is False)
    if unmet:
        print(
            f"warning: {unmet} of {len(lines)} lines do not meet their "
            'constraints ("constraints_met": false in --format jsonl)',
            file=sys.stderr,
        )
    blank = [n for n, line in enumerate(lines, 1) if not line.strip()]
    unused = [n for n in blank if constraints is not None and constraints[n - 1]]
    if unused:  # blank in, blank out: nothing to constrain
        print(
            f"warning: the constraints of {len(unused)} blank lines are not used "
            f"(line {unused[0]}{', ...' if len(unused) > 1 else ''})",
            file=sys.stderr,
        )


def formatted_results(
    args: argparse.Namespace, shown: list[str], results: list, detected: list
) -> list[str]:
    """One output line per input line in ``--format`` (text, text with
    alignments, or JSON Lines); with ``--nbest`` N in text, N lines per input
    line in the layout of Moses, Marian and fairseq: ``i ||| hypothesis |||
    score`` (``i`` from 0, the score normalised as the beam ranked it)."""
    if args.format == "text" and args.nbest > 1:
        return [
            f"{number} ||| {translation.text} ||| {translation.normalized_score:.6f}"
            for number, found in enumerate(results)
            for translation in found
        ]
    if args.format == "text" and args.alignment:  # Marian's and fairseq's layout
        return [
            f"{found[0].text} ||| {found[0].alignment}" if found else " ||| "
            for found in results
        ]
    if args.format == "text":
        return [found[0].text if found else "" for found in results]
    return [
        json.dumps(
            {
                "line": number,
                "source": shown_source,
                **({"detected_language": language} if language else {}),
                "hypotheses": [t.to_dict() for t in found],
            },
            ensure_ascii=False,
        )
        for number, (shown_source, found, language) in enumerate(
            zip(shown, results, detected, strict=True), start=1
        )
    ]


def numbered_lines(inputs: list[str]) -> tuple[list[str], list[str]]:
    """The input lines, and where each is (``FILE:LINE``)."""
    from rosetta.cli.common import read_input_lines

    if not inputs or inputs == ["-"]:
        lines = read_input_lines(inputs)
        return lines, [f"<stdin>:{n}" for n in range(1, len(lines) + 1)]
    lines, origins = [], []
    for path in inputs:
        found = read_input_lines([path])
        lines += found
        origins += [f"{path}:{n}" for n in range(1, len(found) + 1)]
    return lines, origins


def tags_alone(tags: list) -> Translation:
    """The translation of a line that holds tags and no text: the tags."""
    from rosetta.inference.translation import Translation

    text = restore_markup("", "", tags)
    return Translation(text, 0.0, 0.0, [], [], [], alignment="")


def without_markup(lines: list[str], origins: list[str]) -> tuple[list[str], list]:
    """The lines without their tags, and each line's tags; a line whose tags
    do not pair up is refused naming it (``origins``: where each line is)."""
    plain, tags = [], []
    for where, line in zip(origins, lines, strict=True):
        try:
            text, found = strip_markup(line)
        except ValueError as error:
            raise RosettaError(f"{where}: {error}") from None
        plain.append(text)
        tags.append(found)
    return plain, tags


def add_parser(verbs: argparse._SubParsersAction) -> None:
    translate = verbs.add_parser("translate", help="translate text, one line per line")
    add_models_flags(translate, "run folder or checkpoint folder")
    translate.add_argument(
        "-i",
        "--input",
        nargs="*",
        default=[],
        help="input files (default: standard input)",
    )
    translate.add_argument("-o", "--output", help="output file (default: stdout)")
    add_overwrite_flag(translate, "an existing output file")
    add_search_flags(translate)
    number_flag(
        translate,
        "--nbest",
        Count,
        "hypotheses per line; in text, N lines each: i ||| hypothesis ||| score",
        default=1,
    )
    translate.add_argument(
        "--format",
        choices=["text", "jsonl"],
        default="text",
        help="text: the best translation per line; jsonl: one JSON object per "
        "line with the n-best hypotheses, scores, tokens and ids",
    )
    translate.add_argument(
        "--attention",
        action="store_true",
        help="jsonl: add the best hypotheses' attention weights",
    )
    translate.add_argument(
        "--alignment",
        action="store_true",
        help="word alignments from the attention, Pharaoh i-j (source word i, "
        "target word j, from 0): text: TRANSLATION ||| ALIGNMENT; jsonl: "
        '"alignment"',
    )
    translate.add_argument(
        "--markup",
        action="store_true",
        help="carry inline tags (<b>...</b>, <x/>) from each line to its "
        "translation through the word alignment",
    )
    translate.add_argument(
        "--constraints",
        metavar="FILE",
        help="JSON Lines, one object per input line: phrases the translation "
        'must hold and must not hold, and text it starts with: {"include": '
        '["..."], "exclude": ["..."], "prefix": "..."} ({} for none); '
        "phrases to include need --beam 2 or more",
    )
    translate.add_argument(
        "--no-language-check",
        action="store_true",
        help="do not warn about lines that look like another language than "
        "the model's source language",
    )
    add_batching_flags(translate)
    add_npd_flags(translate)
    add_engine_flags(translate)
    translate.set_defaults(run=cmd_translate)
