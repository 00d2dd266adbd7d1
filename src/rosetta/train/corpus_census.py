"""Which languages a run's training corpus is in, identified when it is
prepared and kept in the run (``rosetta.runs.corpus_languages``).

The identifier is the source-language check's (``rosetta.inference.
language_check``), so what ``translate`` later expects is what it would
say of the corpus itself. A sample does: up to ``SAMPLE_LINES`` pairs whose
two sides are long enough to tell, spread evenly over the corpus's first
``SCAN_PAIRS`` pairs, the same ones every time. A side's language is the
one of at least ``MIN_SHARE`` of its sampled lines (of at least
``MIN_LINES``); a side of mixed or unclear languages has none, and nothing
is checked against it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from itertools import islice
from pathlib import Path

from rosetta.config.sections import CorpusFiles, DataConfig
from rosetta.data.corpus import stream_corpus
from rosetta.errors import RosettaError
from rosetta.inference.language_check import LanguageCheck, checkable, language_code
from rosetta.inference.languages import UNNAMED
from rosetta.runs.corpus_languages import (
    CorpusLanguages,
    SideLanguage,
    read_corpus_languages,
    side_words,
    write_corpus_languages,
)

SAMPLE_LINES = 300
SCAN_PAIRS = 30_000
MIN_LINES = 20
MIN_SHARE = 0.8
IDENTIFIER = "py3langid"


def sample_pairs(files: CorpusFiles) -> list[tuple[str, str]]:
    """Up to ``SAMPLE_LINES`` pairs of ``files`` whose sides are both long
    enough to tell (``checkable``), spread evenly over its first
    ``SCAN_PAIRS``."""
    pairs = [
        (source, target)
        for source, target in islice(stream_corpus(files), SCAN_PAIRS)
        if checkable(source) and checkable(target)
    ]
    count = min(SAMPLE_LINES, len(pairs))
    return [pairs[i * len(pairs) // count] for i in range(count)]


def side_language(guesses: Sequence[str]) -> SideLanguage:
    """A side's record from each sampled line's likeliest language."""
    likeliest, count = (Counter(guesses).most_common(1) or [(None, 0)])[0]
    share = count / len(guesses) if guesses else 0.0
    clear = len(guesses) >= MIN_LINES and share >= MIN_SHARE
    return SideLanguage(
        language=likeliest if clear else None, likeliest=likeliest, share=share
    )


def identify(
    pairs: Sequence[tuple[str, str]], check: LanguageCheck
) -> CorpusLanguages | None:
    """Both sides' languages of ``pairs``; None without an identifier."""
    sources = check.likeliest([source for source, _ in pairs])
    targets = check.likeliest([target for _, target in pairs])
    if sources is None or targets is None:
        return None
    return CorpusLanguages(
        identifier=IDENTIFIER,
        lines=len(pairs),
        source=side_language(sources),
        target=side_language(targets),
    )


def contradiction(
    found: CorpusLanguages, data: DataConfig, check: Callable[[], LanguageCheck]
) -> str | None:
    """One warning line where ``data.src_lang`` or ``data.tgt_lang`` names a
    language the identifier knows, and the corpus's side clearly is another
    one; None otherwise. ``check`` gives a loaded check, asked only then."""
    said = []
    sides = (("src_lang", "source", found.source), ("tgt_lang", "target", found.target))
    for key, side, seen in sides:
        stated = getattr(data, key)
        if stated in UNNAMED or seen.language in (None, language_code(stated)):
            continue
        if check().expect(stated):  # a language it cannot tell is never contradicted
            said.append(
                f"data.{key} is {stated} but the corpus's {side} looks like "
                f"{side_words(seen)}"
            )
    if not said:
        return None
    return (
        f"warning: {'; '.join(said)} of {found.lines} sampled lines; check the "
        "configuration, and which side of the corpus is which"
    )


class CorpusCensus:
    """The run's record of its corpus's languages, made (or read back) as
    the run is prepared: made with the run, the identifier reads its model
    in a thread meanwhile (``LanguageCheck``)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        try:
            self.recorded = read_corpus_languages(run_dir)
        except RosettaError:  # damaged: identified again, and rewritten
            self.recorded = None
        # its model is read now only where the run is to be identified
        self._check = LanguageCheck() if self.recorded is None else None

    def check(self) -> LanguageCheck:
        """A check whose identifier is being read (or was)."""
        if self._check is None:
            self._check = LanguageCheck()
        return self._check

    def record(
        self, data: DataConfig, fresh: bool, log: Callable[[str], None]
    ) -> CorpusLanguages | None:
        """The record: identified again where the run has none or the corpus
        was just encoded (``fresh``), else the run's; said in one line, with
        one more where the configuration's languages contradict it. None
        where the identifier cannot be read (nothing is written then)."""
        found = None if fresh else self.recorded
        if found is None:
            assert data.train is not None  # require_corpus
            found = identify(sample_pairs(data.train), self.check())
            if found is None:
                log(f"corpus languages: not identified ({IDENTIFIER} cannot be read)")
                return None
            write_corpus_languages(self.run_dir, found)
        log(found.summary())
        if warning := contradiction(found, data, self.check):
            log(warning)
        return found
