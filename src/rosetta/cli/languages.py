"""``rosetta languages``: the language codes a model takes, with their names."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rosetta.inference.text_translator import TextTranslator


def cmd_languages(args: argparse.Namespace) -> None:
    from rosetta.cli.common import load_translator

    rows = language_rows(load_translator(args, [args.model]))
    width = max(len(code) for code, _ in rows)
    for code, what in rows:
        print(f"{code:<{width}}  {what}")
    sys.stdout.flush()


def language_rows(translator: TextTranslator) -> list[tuple[str, str]]:
    """(code, what it is) for each language the model takes: every code of a
    multilingual model, with its name and sides; a model of one pair, its
    source and target as configured."""
    from rosetta.inference.language_codes import name_of

    codes = translator.target_languages
    if codes:
        sides = "source and target" if translator.tags_both_sides else "target"
        return [(code, f"{name_of(code) or '?'} ({sides})") for code in codes]
    from rosetta.inference.languages import UNNAMED

    data, found = translator.config.data, translator.corpus_languages
    rows = []
    for side, code, stand_in in zip(
        ("source", "target"), (data.src_lang, data.tgt_lang), UNNAMED, strict=True
    ):
        said = f"{side}"
        if code == stand_in and found is not None:  # the corpus tells instead
            code = getattr(found, side).language
            said = f"{side}, as its training corpus reads"
        if code and code != stand_in:
            rows.append((code, f"{name_of(code) or '?'} ({said})"))
    if not rows:
        rows.append(("-", "the run names no languages (data.src_lang, data.tgt_lang)"))
    return rows


def add_parser(verbs: argparse._SubParsersAction) -> None:
    verb = verbs.add_parser(
        "languages",
        help="list the language codes a model takes (--source-lang, "
        "--target-lang), with their names",
    )
    verb.add_argument(
        "-m", "--model", required=True, help="run folder or checkpoint folder"
    )
    verb.add_argument("--device", default="cpu", help="where the model loads")
    verb.set_defaults(
        run=cmd_languages,
        engine="rosetta",
        precision="fp32",
        threads=None,
        target_lang=None,
        compiled=False,
    )
