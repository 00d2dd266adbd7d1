"""Is each input line in the model's source language? A warning, never a
change to the translation.

A model fed another language translates it anyway, badly and without a
word ("A woman is on theiriririririr heads." from English into a
German→English model). The check names such lines. It uses ``py3langid``
(langid.py's model: character n-gram naive Bayes over 97 languages, about
0.1 ms a line). Its model takes most of a second to read, so it is read in
a thread started with the check, while the translation model loads (the
source language is known once the model has loaded), and once a process.

A line is checked when it has at least ``MIN_WORDS`` words and
``MIN_LETTERS`` letters (shorter ones are too little to tell), and flagged
when the likeliest language is not the source language. A source language
the identifier does not know (or no ``py3langid`` installed) checks nothing,
and an unknown one is said once (``off_note``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from rosetta.inference.language_codes import language_of

MIN_WORDS = 2
UNNAMED = "src"  # data.src_lang of a run that names no language
MIN_LETTERS = 10


_identifier_lock = threading.Lock()
_identifier_read: list[Any] = []  # the identifier, once read (None: none)


def load_identifier() -> Any:
    """py3langid's identifier, read once a process (most of a second): None
    where it is not installed, or damaged."""
    with _identifier_lock:
        if not _identifier_read:
            _identifier_read.append(_read_identifier())
        return _identifier_read[0]


def _read_identifier() -> Any:
    try:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier
    except ImportError:  # not installed: no check
        return None
    try:
        return LanguageIdentifier.from_model_file(MODEL_FILE)
    except Exception:  # a damaged install: no check, not a thread's traceback
        return None


def language_code(name: str | None) -> str | None:
    """The code the identifier knows in a language name as runs and models
    write it: ``de``, ``de_DE``, and ``deu`` or NLLB-200's ``deu_Latn`` as
    ``de`` (``language_of``); a code without a two-letter one stays itself
    (``ace``); None for none."""
    return language_of(name) if name else None


def checkable(line: str) -> bool:
    letters = sum(c.isalpha() for c in line)
    return len(line.split()) >= MIN_WORDS and letters >= MIN_LETTERS


class LanguageCheck:
    """Flags lines not in a model's source language (``data.src_lang``)."""

    def __init__(self, enabled: bool = True) -> None:
        """Disabled, it checks nothing (and reads no model)."""
        self.language: str | None = None
        self.unknown: str | None = None  # a source language it cannot check
        self._identifier: Any = None
        self._loading = threading.Thread(target=self._load, daemon=True)
        if enabled:
            self._loading.start()

    def _load(self) -> None:
        self._identifier = load_identifier()

    def _wait(self) -> None:
        if self._loading.ident is not None:  # started (a disabled check is not)
            self._loading.join()

    def expect(self, language: str | None) -> bool:
        """Check lines against ``language`` from now on; whether the
        identifier knows it (waits for the identifier to load)."""
        self._wait()
        code = self.known_code(language)
        self.language = code
        named = language_code(language) not in (None, UNNAMED)
        self.unknown = language if named and code is None else None
        return code is not None

    def checked(
        self, lines: Sequence[str], language: str | None
    ) -> tuple[list[str | None], str | None]:
        """``expect(language)``, then per line the language it looks like
        (``detected``) and the one line to say of them: the warning, or that
        the check is off for ``language`` (None for nothing to say)."""
        if not self.expect(language):
            return [None] * len(lines), self.off_note()
        detected = self.detected(lines)
        return detected, self.warning(detected)

    def known_code(self, language: str | None) -> str | None:
        """``language`` as the identifier's code, if it knows it."""
        code = language_code(language)
        known = self._identifier is not None and code in self._identifier.nb_classes
        return code if known else None

    def off_note(self) -> str | None:
        """One line saying the check is off, where the source language was
        given but the identifier does not know it (after ``expect``)."""
        if self._identifier is None or self.unknown is None:
            return None
        return (
            f"note: the language check does not know {self.unknown!r}; "
            "lines in another language are not flagged"
        )

    def detected(
        self, lines: Sequence[str], language: str | None = None
    ) -> list[str | None]:
        """Per line, the language it looks like where that is not the source
        language (``expect``'s, or ``language`` for these lines alone: a
        request's own); None for a line in it, too short to tell, or
        unchecked."""
        expected = self.language if language is None else self.known_code(language)
        if expected is None:
            return [None] * len(lines)
        found: list[str | None] = []
        for line in lines:
            guess = self._identifier.classify(line)[0] if checkable(line) else None
            found.append(guess if guess not in (None, expected) else None)
        return found

    def likeliest(self, lines: Sequence[str]) -> list[str] | None:
        """Per line, the language it looks like most, whatever the source
        language; None where there is no identifier (waits for it to load)."""
        self._wait()
        if self._identifier is None:
            return None
        return [self._identifier.classify(line)[0] for line in lines]

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
