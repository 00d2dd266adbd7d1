"""A run's ``corpus_languages.json``: the languages its training corpus is
in, as ``prepare`` identified them from a sample of its pairs
(``rosetta.train.corpus_census``).

What it is for: a run whose configuration names no source language
(``data.src_lang``) still knows the language its model reads, so
``translate`` and the server can say which input lines look like another
one. A run without the file (trained before it was written, imported)
names none, as before.
"""

from __future__ import annotations

from pathlib import Path

from rosetta.runtime.atomic import write_json_atomic
from rosetta.runtime.records import Record, read_record

LANGUAGES_FILE = "corpus_languages.json"


class SideLanguage(Record):
    """One side of the corpus: the likeliest language of the most sample
    lines (None: no line was identified), its share of them, and
    ``language``, that one where it is clear enough to check input against
    (None for a side of mixed or unclear languages)."""

    language: str | None
    likeliest: str | None
    share: float


class CorpusLanguages(Record):
    """The whole file: the identifier, the lines sampled, and each side."""

    identifier: str
    lines: int
    source: SideLanguage
    target: SideLanguage

    def summary(self) -> str:
        """One line for the log: ``corpus languages: source de (97% of 300
        lines), target en (99%)``."""
        source = side_words(self.source, f" of {self.lines} lines")
        return f"corpus languages: source {source}, target {side_words(self.target)}"


def side_words(side: SideLanguage, sample: str = "") -> str:
    """``de (97%)``, or ``unclear (eu 47%)`` for a side without a clear
    language; ``sample`` goes inside the brackets."""
    if side.language is not None:
        return f"{side.language} ({side.share:.0%}{sample})"
    return f"unclear ({side.likeliest or 'none'} {side.share:.0%}{sample})"


def write_corpus_languages(run_dir: Path, record: CorpusLanguages) -> None:
    """``record`` as the run's file, all or nothing."""
    write_json_atomic(run_dir / LANGUAGES_FILE, record.model_dump(mode="json"))


def read_corpus_languages(run_dir: Path) -> CorpusLanguages | None:
    """The run's record, or None where it has none; a damaged one is one
    line naming the file."""
    path = Path(run_dir) / LANGUAGES_FILE
    if not (path.exists() or path.is_symlink()):
        return None
    return read_record(path, CorpusLanguages, "a run's record of corpus languages")
