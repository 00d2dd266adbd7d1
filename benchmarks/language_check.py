"""The source-language check on Multi30k test_2016: the share of German
lines a check for German passes, the share of English lines it flags, and
its time per line (``rosetta.inference.language_check``).

    python benchmarks/language_check.py
"""

from __future__ import annotations

import gzip
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ROOT
from rosetta.inference.language_check import LanguageCheck

DATA = ROOT / "data" / "multi30k"


def lines(language: str) -> list[str]:
    with gzip.open(DATA / f"test_2016_flickr.{language}.gz", "rt") as handle:
        return [line.rstrip("\n") for line in handle]


def main() -> None:
    check = LanguageCheck()
    check.expect("de")
    print("| lines | flagged | ms per line |")
    print("|---|---|---|")
    for language in ("de", "en"):
        text = lines(language)
        began = time.perf_counter()
        flagged = sum(bool(found) for found in check.detected(text))
        ms = (time.perf_counter() - began) * 1000 / len(text)
        print(f"| {len(text):,} {language} | {flagged:,} | {ms:.3f} |")


if __name__ == "__main__":
    main()
