"""Inline markup carried from a source line to its translation through the
word alignment (``rosetta.inference.alignment``).

Simple tags are understood: a pair ``<b>…</b>`` (any name, attributes kept
as written; pairs may nest) and a lone ``<x/>``. The tags are taken out of
the line before it is translated; then a pair goes around the target words
aligned to the source words it enclosed (from the first such word to the
last), and a lone tag goes before the first target word aligned to the
source word it stood before. A tag whose words are aligned to nothing goes
at the end of the translation (a pair then encloses nothing), so no tag is
ever lost. A line whose tags do not pair up is refused in one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TAG = re.compile(r"<(/?)([A-Za-z][\w.-]*)((?:\s[^<>]*?)?)\s*(/?)>")


@dataclass(frozen=True)
class Tag:
    """A tag of the source: a pair enclosing words ``first..last`` (a lone
    tag: ``last`` is None, standing before word ``first``)."""

    opening: str
    closing: str
    first: int
    last: int | None


def strip_markup(line: str) -> tuple[str, list[Tag]]:
    """``line`` without its tags, and the tags with the words (of the text
    without them, split on spaces) they enclose or stand before;
    ``ValueError`` for tags that do not pair up."""
    plain, tags = [], []
    open_: list[tuple[str, str, int]] = []  # name, opening text, its offset
    at = 0
    for found in TAG.finditer(line):
        plain.append(line[at : found.start()])
        at = found.end()
        offset = len("".join(plain))
        closing, name, _, lone = found.groups()
        if lone:
            tags.append((found.group(0), "", offset, None))
        elif not closing:
            open_.append((name, found.group(0), offset))
        elif not open_ or open_[-1][0] != name:
            raise ValueError(f"</{name}> closes no <{name}>")
        else:
            _, opening, start = open_.pop()
            tags.append((opening, found.group(0), start, offset))
    if open_:
        raise ValueError(f"<{open_[-1][0]}> is not closed")
    plain.append(line[at:])
    text = "".join(plain)
    return " ".join(text.split()), [_in_words(text, *tag) for tag in tags]


def _in_words(
    text: str, opening: str, closing: str, start: int, end: int | None
) -> Tag:
    """A tag at character offsets of ``text``, as word positions."""

    def word_at(offset: int) -> int:  # the word a character offset starts
        return len(text[:offset].split()) - (
            offset > 0
            and not text[offset - 1].isspace()
            and bool(text[:offset].split())
        )

    first = word_at(start)
    if end is None:
        return Tag(opening, closing, first, None)
    last = max(len(text[:end].split()) - 1, first)
    return Tag(opening, closing, first, last)


def restore_markup(translation: str, alignment: str, tags: list[Tag]) -> str:
    """``translation`` with ``tags`` put back where ``alignment`` (Pharaoh)
    carries their words."""
    words = translation.split()
    to_target: dict[int, list[int]] = {}
    for link in alignment.split():
        source, target = map(int, link.split("-"))
        to_target.setdefault(source, []).append(target)
    before: dict[int, list[str]] = {}
    after: dict[int, list[str]] = {}
    trailing: list[str] = []
    # outer pairs first: their openings come first and their closings last
    for tag in sorted(tags, key=lambda t: (t.first, -(t.last or t.first))):
        span = range(tag.first, (tag.first if tag.last is None else tag.last) + 1)
        targets = sorted(
            t for s in span for t in to_target.get(s, []) if t < len(words)
        )
        if not targets:
            trailing.append(tag.opening + tag.closing)
        elif tag.last is None:
            before.setdefault(targets[0], []).append(tag.opening)
        else:
            before.setdefault(targets[0], []).append(tag.opening)
            after.setdefault(targets[-1], []).insert(0, tag.closing)
    marked = [
        "".join(before.get(i, [])) + word + "".join(after.get(i, []))
        for i, word in enumerate(words)
    ]
    return " ".join([*marked, *trailing]) if trailing else " ".join(marked)
