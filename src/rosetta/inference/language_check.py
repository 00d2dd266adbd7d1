"""Is each input line in the model's source language? A warning, never a
change to the translation.

A model fed another language translates it anyway, badly and without a
word ("A woman is on theiriririririr heads." from English into a
German→English model). The check names such lines. It uses ``py3langid``
(langid.py's model: character n-gram naive Bayes over 97 languages, about
0.1 ms a line). Its model takes most of a second to read, so it is read in
a thread started with the check, while the translation model loads (the
source language is known once the model has loaded).

A line is checked when it has at least ``MIN_WORDS`` words and
``MIN_LETTERS`` letters (shorter ones are too little to tell), and flagged
when the likeliest language is not the source language. A source language
the identifier does not know (or no ``py3langid`` installed) checks nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

MIN_WORDS = 2
MIN_LETTERS = 10


def language_code(name: str | None) -> str | None:
    """The two-letter code in a language name as runs write it (``de``,
    ``de_DE``, ``deu`` stays itself); None for none."""
    if not name:
        return None
    return name.replace("-", "_").split("_")[0].lower()


def checkable(line: str) -> bool:
    letters = sum(c.isalpha() for c in line)
    return len(line.split()) >= MIN_WORDS and letters >= MIN_LETTERS


class LanguageCheck:
    """Flags lines not in a model's source language (``data.src_lang``)."""

    def __init__(self, enabled: bool = True) -> None:
        """Disabled, it checks nothing (and reads no model)."""
        self.language: str | None = None
        self._identifier: Any = None
        self._loading = threading.Thread(target=self._load, daemon=True)
        if enabled:
            self._loading.start()

    def _load(self) -> None:
        try:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier
        except ImportError:  # not installed: no check
            return
        try:
            self._identifier = LanguageIdentifier.from_model_file(MODEL_FILE)
        except Exception:  # a damaged install: no check, not a thread's traceback
            self._identifier = None

    def expect(self, language: str | None) -> bool:
        """Check lines against ``language`` from now on; whether the
        identifier knows it (waits for the identifier to load)."""
        if self._loading.ident is not None:  # started (a disabled check is not)
            self._loading.join()
        code = language_code(language)
        known = self._identifier is not None and code in self._identifier.nb_classes
        self.language = code if known else None
        return known

    def detected(self, lines: Sequence[str]) -> list[str | None]:
        """Per line, the language it looks like where that is not the source
        language; None for a line in it, too short to tell, or unchecked."""
        if self.language is None:
            return [None] * len(lines)
        found: list[str | None] = []
        for line in lines:
            guess = self._identifier.classify(line)[0] if checkable(line) else None
            found.append(guess if guess not in (None, self.language) else None)
        return found

    def warning(self, detected: Sequence[str | None]) -> str | None:
        """One line for stderr summing the flagged lines up, or None."""
        flagged = [(n, lang) for n, lang in enumerate(detected, 1) if lang]
        if not flagged:
            return None
        counts: dict[str, int] = {}
        for _, lang in flagged:
            counts[lang] = counts.get(lang, 0) + 1
        seen = ", ".join(f"{lang} {count}" for lang, count in counts.items())
        return (
            f"warning: {len(flagged)} of {len(detected)} lines look like another "
            f"language than {self.language}, the model's source language ({seen}; "
            f'first: line {flagged[0][0]}); "detected_language" in --format '
            "jsonl; --no-language-check turns this off"
        )
