"""Constraints on one translation, as text: phrases it must include,
phrases it must exclude, and a prefix it must start with.

They are validated here, once, wherever they come from (the Python API, a
``--constraints`` file, a server request), and spelled in the model's
target vocabulary by the translator (``Constraint.tokens``): an include
phrase and the prefix as the target tokenizer writes them where a word
starts (after a space, or at the start), an excluded phrase in every way the
vocabulary can write it (``rosetta.inference.bans``). The search
(``rosetta.search.constraints``) then works on token ids.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rosetta.data.tokenizer import Tokenizer
from rosetta.data.vocab import SPECIALS
from rosetta.errors import RosettaError
from rosetta.inference.bans import PhraseSpeller
from rosetta.search.constraints import TokenConstraints
from rosetta.search.options import check_phrases

FIELDS = ("include", "exclude", "prefix")
MAX_PREFIX_CHARS = 1000


def check_text(text: Any, what: str, most: int) -> None:
    """``ValueError`` unless ``text`` is a string of at most ``most``
    characters without a lone surrogate."""
    if not isinstance(text, str):
        raise ValueError(f"{what} is not text: {text!r}")
    if len(text) > most:
        raise ValueError(f"{what} has {len(text)} characters; at most {most}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(
            f"{what}: a lone surrogate at character {error.start} is not text"
        ) from None


@dataclass(frozen=True)
class Constraint:
    """What one translation must hold (``include``), must not hold
    (``exclude``) and must start with (``prefix``); the default holds none."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    prefix: str = ""
    origin: str = field(default="", compare=False)  # where it was given: FILE:LINE

    def __post_init__(self) -> None:
        for name in ("include", "exclude"):
            phrases = getattr(self, name)
            if isinstance(phrases, str) or not isinstance(phrases, Sequence):
                raise ValueError(f"{name} is a list of phrases, not {phrases!r}")
            check_phrases(phrases, what=f"{name} phrase")
            object.__setattr__(self, name, tuple(phrases))
        check_text(self.prefix, "prefix", MAX_PREFIX_CHARS)

    def __bool__(self) -> bool:
        return bool(self.include or self.exclude or self.prefix.strip())

    @classmethod
    def from_dict(cls, data: Any, origin: str = "") -> Constraint:
        """``{"include": [...], "exclude": [...], "prefix": "..."}``, any of
        them left out; ``ValueError`` naming a field that does not fit."""
        if not isinstance(data, Mapping):
            raise ValueError(
                'not a JSON object such as {"include": ["..."], "prefix": "..."}'
            )
        unknown = [key for key in data if key not in FIELDS]
        if unknown:
            raise ValueError(f"unknown field {unknown[0]!r}: use {', '.join(FIELDS)}")
        include, exclude = data.get("include", ()), data.get("exclude", ())
        if isinstance(include, list | tuple) and isinstance(exclude, list | tuple):
            return cls(tuple(include), tuple(exclude), data.get("prefix", ""), origin)
        wrong = "include" if not isinstance(include, list | tuple) else "exclude"
        raise ValueError(f"{wrong} is a list of phrases, not {data[wrong]!r}")

    def tokens(self, tokenizer: Tokenizer, speller: PhraseSpeller) -> TokenConstraints:
        """These constraints in ``tokenizer``'s ids (the target side's);
        ``ValueError`` for a phrase to include or a prefix the vocabulary
        cannot write (it would hold ``<unk>``)."""
        include = tuple(
            self._written(p, tokenizer, "include phrase") for p in self.include
        )
        prefix = ()
        if self.prefix.strip():
            prefix = self._written(self.prefix, tokenizer, "prefix")
        exclude = tuple(speller.spellings(p) for p in self.exclude)
        ends_word = bool(prefix) and self.prefix[-1].isspace()  # "Das ": a word
        glue = speller.continuations if include or ends_word else frozenset()
        return TokenConstraints(include, exclude, prefix, glue, ends_word)

    def written_prefix(self, tokenizer: Tokenizer) -> str:
        """The prefix as the target side writes it (normalised as its
        tokenizer normalises; "" for none)."""
        if not self.prefix.strip():
            return ""
        return " ".join(tokenizer.decode(tokenizer.encode(self.prefix)).split())

    def prefix_kept(self, text: str, written: str) -> bool:
        """Whether the translation ``text`` starts with the prefix as
        ``written`` (``written_prefix``), and with a whole word where the
        prefix ended with a space."""
        if not written:
            return True
        if not text.startswith(written):
            return False
        return not self.prefix[-1].isspace() or text[
            len(written) : len(written) + 1
        ] in ("", " ")

    @staticmethod
    def _written(text: str, tokenizer: Tokenizer, what: str) -> tuple[int, ...]:
        ids = tuple(tokenizer.encode(text))
        if not ids:
            raise ValueError(f"{what} {text!r} is empty")
        if min(ids) < len(SPECIALS):
            raise ValueError(
                f"{what} {text!r} holds characters the model's target "
                "vocabulary cannot write"
            )
        return ids


def as_constraints(given: Any, count: int) -> list[Constraint] | None:
    """``given`` (a list parallel to ``count`` sentences, each a
    ``Constraint``, a mapping of its fields or None) as ``Constraint``s;
    None where there are none. ``ValueError`` naming the sentence (from 1)
    whose constraints do not fit."""
    if given is None:
        return None
    if isinstance(given, str | bytes | Mapping) or not isinstance(given, Sequence):
        raise ValueError("constraints: a list with one entry per sentence")
    if len(given) != count:
        raise ValueError(
            f"{len(given)} constraints for {count} sentences: give one per "
            "sentence ({} or None for none)"
        )
    found = []
    for number, item in enumerate(given, start=1):
        try:
            if item is None:
                item = Constraint()
            elif not isinstance(item, Constraint):
                item = Constraint.from_dict(item)
        except ValueError as error:
            raise ValueError(f"constraints of sentence {number}: {error}") from None
        found.append(item)
    return found if any(found) else None


def spell_constraints(
    constraints: list[Constraint],
    sources: list[list[int]],
    tokenizer: Tokenizer,
    speller: PhraseSpeller,
    room: int | None,
) -> list[TokenConstraints]:
    """``constraints`` in the target vocabulary's ids (``Constraint.tokens``);
    ``RosettaError`` naming the line (from 1) whose constraints cannot be
    written, or do not fit in ``room`` positions."""
    found = []
    for line, (constraint, source) in enumerate(
        zip(constraints, sources, strict=True), start=1
    ):
        where = constraint.origin or f"constraints of line {line}"
        try:
            tokens = constraint.tokens(tokenizer, speller)
        except ValueError as error:
            raise RosettaError(f"{where}: {error}") from None
        need = len(tokens.prefix) + tokens.needed + 1
        if source and room is not None and need > room:
            raise RosettaError(
                f"{where}: the prefix and the phrases to "
                f"include take {need} tokens with <eos>; the model's positions "
                f"allow {room}"
            )
        found.append(tokens)
    return found


def read_constraints_file(path: str, count: int) -> list[Constraint]:
    """A JSON Lines file of constraints, one object per input line (``{}``
    for none); one line naming the file and line of what does not fit, or a
    count that differs from the ``count`` input lines."""
    if not str(path):
        raise RosettaError("--constraints needs a file name")
    try:
        if not stat.S_ISREG(os.stat(path).st_mode) and not Path(path).is_fifo():
            raise RosettaError(
                f"{path}: not a file of constraints (a folder or device)"
            )
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise RosettaError(f"{path}: file not found") from None
    except OSError as error:
        raise RosettaError(f"{path}: unreadable ({error.strerror})") from None
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()  # the newline that ends the last line
    if len(lines) != count:
        raise RosettaError(
            f"{path}: {len(lines)} lines of constraints for {count} input lines; "
            "give one JSON object per input line ({} for none)"
        )
    found = []
    for number, line in enumerate(lines, start=1):
        try:
            data_line = json.loads(line.decode("utf-8"))
            found.append(Constraint.from_dict(data_line, f"{path}:{number}"))
        except UnicodeDecodeError as error:
            raise RosettaError(
                f"{path}:{number}: invalid UTF-8 at byte {error.start}"
            ) from None
        except RecursionError:
            raise RosettaError(f"{path}:{number}: nested too deep") from None
        except ValueError as error:  # JSON's errors are ValueErrors too
            raise RosettaError(f"{path}:{number}: {error}") from None
    return found
