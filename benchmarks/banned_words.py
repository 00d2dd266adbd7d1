"""Banned words: does ``--ban WORD`` keep the word out of every translation,
in every casing, and what does it cost in BLEU?

Multi30k test_2016 (de→en), beam 5: the plain translation, then with each
word of ``--words`` banned (``SearchOptions.ban``), then banned with its
forms (``ban_forms``: every word that starts with it). Reported per word:
the outputs holding it as a word in lower case, in any casing, and in any
form (the word and the words that start with it), and sacreBLEU on all
1,000 lines and on the lines whose plain translation held the word.

    python benchmarks/banned_words.py --model runs/demo [--words dog man]
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
import time
from pathlib import Path

import sacrebleu

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ROOT, write_json
from rosetta import SearchOptions
from rosetta.jobs.loading import load_translator

DATA = ROOT / "data" / "multi30k"


def read_lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in handle]


def holding(outputs: list[str], pattern: str, flags: int = 0) -> int:
    found = re.compile(pattern, flags)
    return sum(bool(found.search(line)) for line in outputs)


def counts(outputs: list[str], word: str) -> dict[str, int]:
    w = re.escape(word)
    return {
        "lower case": holding(outputs, rf"\b{w}\b"),
        "any casing": holding(outputs, rf"\b{w}\b", re.IGNORECASE),
        "any form": holding(outputs, rf"\b{w}\w*", re.IGNORECASE),
    }


def bleu(outputs: list[str], references: list[str], lines: list[int]) -> float:
    picked = [outputs[i] for i in lines], [references[i] for i in lines]
    return round(sacrebleu.corpus_bleu(picked[0], [picked[1]]).score, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="run or checkpoint")
    parser.add_argument("--words", nargs="+", default=["dog", "man", "woman"])
    parser.add_argument("--threads", type=int, default=0, help="0: torch's")
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    sources = read_lines(DATA / "test_2016_flickr.de.gz")
    references = read_lines(DATA / "test_2016_flickr.en.gz")
    translator = load_translator(args.model)
    beam = SearchOptions(beam_size=5)
    began = time.perf_counter()
    plain = translator.translate(sources, beam, batch_size=32)
    seconds = {"plain": time.perf_counter() - began}
    rows, everything = [], range(len(sources))
    for word in args.words:
        had = [i for i, line in enumerate(plain) if re.search(rf"\b{word}", line, re.I)]
        row = {"word": word, "lines": len(had)}
        for name, options in (
            ("plain", beam),
            ("--ban", SearchOptions(beam_size=5, ban=(word,))),
            (
                "--ban --ban-forms",
                SearchOptions(beam_size=5, ban=(word,), ban_forms=True),
            ),
        ):
            began = time.perf_counter()
            if name == "plain":
                outputs = plain
            else:
                found = translator.translate(sources, options, batch_size=32)
                outputs = list(found)
                seconds[f"{word} {name}"] = time.perf_counter() - began
            row[name] = {
                **counts(outputs, word),
                "BLEU": bleu(outputs, references, list(everything)),
                "BLEU on its lines": bleu(outputs, references, had) if had else None,
            }
        rows.append(row)
    print(f"test_2016, {len(sources)} lines, beam 5, {args.model}")
    print(
        "| word | search | outputs with it (lower case / any casing / any form) "
        "| BLEU, all lines | BLEU, its lines |"
    )
    print("|---|---|---|---|---|")
    for row in rows:
        for name in ("plain", "--ban", "--ban --ban-forms"):
            r = row[name]
            print(
                f"| {row['word']} ({row['lines']} lines) | {name} | "
                f"{r['lower case']} / {r['any casing']} / {r['any form']} | "
                f"{r['BLEU']} | {r['BLEU on its lines']} |"
            )
    print("seconds:", {k: round(v, 1) for k, v in seconds.items()})
    if args.json:
        write_json(args.json, {"rows": rows, "seconds": seconds})


if __name__ == "__main__":
    main()
