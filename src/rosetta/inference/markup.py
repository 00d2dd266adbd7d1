"""Inline markup carried from a source line to its translation through the
word alignment (``rosetta.inference.alignment``).

The line is read as HTML is read, by the standard library's ``html.parser``:
a pair ``<b>…</b>`` (any name HTML reads: ``<b:x>``, ``<my-tag>``;
attributes kept byte for byte, a ``>`` inside quotes included; pairs may
nest), a lone ``<x/>``, an element that is always lone (``<br>``,
``<img …>``) and a comment. Character references (``&amp;``) stay text as
written. The tags are taken out of the line before it is translated; then:

- a pair goes around the target words aligned to the source words it
  enclosed (from the first such word to the last), kept inside the pair
  around it and after the pair before it, so the output nests as the input
  did;
- a lone tag goes before the first target word aligned to the source word it
  stood before, or, glued to the end of a word (``läuft.<br/>``), after the
  last target word aligned to that word;
- a tag whose words are aligned to nothing (or whose place the pairs around
  it leave no room for) goes at the end of the translation, in the order and
  nesting of the input, so no tag is ever lost.

Refused in one line: tags that do not pair up, and a ``<`` before a letter
that HTML does not read as a tag (``<ü>``: a tag name starts with an ASCII
letter; write ``&lt;`` for a ``<`` of the text).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from html.parser import HTMLParser

# elements HTML never closes: lone without the slash
VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta"}
    | {"param", "source", "track", "wbr"}
)
NOT_A_TAG = re.compile(r"<[^\W\d_]")  # a letter after <, which HTML left as text


@dataclass(frozen=True)
class Tag:
    """A tag of the source: a pair enclosing words ``first..last`` (a lone
    tag: ``last`` is None, standing before word ``first``, or after it if
    ``after``). ``opened``/``closed``: its place among the line's tag events
    (openings, closings and lone tags, in the order written); ``parent``:
    ``opened`` of the pair around it, if any."""

    opening: str
    closing: str
    first: int
    last: int | None
    opened: int = 0
    closed: int = 0
    parent: int | None = None
    after: bool = False


class _Reader(HTMLParser):
    """The line's text and its tag events, each at its offset in the text."""

    def __init__(self, line: str):
        super().__init__(convert_charrefs=False)
        self.line, self.text = line, ""
        # kind, name, raw, offset in the text, offset in the line
        self.events: list[tuple[str, str, str, int, int]] = []

    def add(self, kind: str, name: str, raw: str) -> None:
        self.events.append((kind, name, raw, len(self.text), self.getpos()[1]))

    def raw(self) -> str:
        """The construct being handled, as written (``getpos``: where it starts)."""
        start = self.getpos()[1]
        return self.line[start : self.line.index(">", start) + 1]

    def handle_starttag(self, tag: str, attrs: list) -> None:
        kind = "lone" if tag in VOID else "open"
        self.add(kind, tag, self.get_starttag_text() or "")

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        self.add("lone", tag, self.get_starttag_text() or "")

    def handle_endtag(self, tag: str) -> None:
        self.add("close", tag, self.raw())

    def handle_comment(self, data: str) -> None:
        self.add("lone", "", f"<!--{data}-->")

    def handle_decl(self, decl: str) -> None:
        self.add("lone", "", self.raw())

    handle_pi = handle_decl

    def unknown_decl(self, data: str) -> None:
        self.add("lone", "", self.raw())

    def handle_data(self, data: str) -> None:
        self.text += data

    def handle_entityref(self, name: str) -> None:
        self.text += f"&{name};"

    def handle_charref(self, name: str) -> None:
        self.text += f"&#{name};"


def strip_markup(line: str) -> tuple[str, list[Tag]]:
    """``line`` without its tags, and the tags with the words (of the text
    without them, split on spaces) they enclose or stand by; ``ValueError``
    for tags that do not pair up or text HTML does not read."""
    reader = _Reader(line)
    reader.feed(line)
    reader.close()
    text = reader.text  # a < HTML left as text came in a piece of its own
    if found := NOT_A_TAG.search(text):
        shown = text[found.start() :].split(">")[0].split()[0] + ">"
        raise ValueError(
            f"{shown} is not a tag HTML reads (a tag's name starts with an "
            "ASCII letter); write &lt; for a < of the text"
        )
    tags: list[Tag] = []
    open_: list[tuple[str, str, int, int, int]] = []  # name, raw, offsets, event
    for event, (kind, name, raw, offset, at) in enumerate(reader.events):
        parent = open_[-1][4] if open_ else None
        if kind == "lone":
            first, after = _lone_word(text, offset)
            tags.append(Tag(raw, "", first, None, event, event, parent, after))
        elif kind == "open":
            open_.append((name, raw, offset, at, event))
        elif not open_ or open_[-1][0] != name:
            raise ValueError(f"</{name}> closes no <{name}>")
        else:
            _, opening, start, opened_at, opened = open_.pop()
            parent = open_[-1][4] if open_ else None
            if text[start:offset].strip():
                first, last = _pair_words(text, start, offset)
                _keep_inside(tags, opened, first, last)
                tags.append(Tag(opening, raw, first, last, opened, event, parent))
                continue
            # a pair around no text is one lone tag, written as it is whole
            while tags and tags[-1].opened > opened:
                tags.pop()  # its insides are in it
            whole = line[opened_at : at + len(raw)]
            first, after = _lone_word(text, start)
            tags.append(Tag(whole, "", first, None, opened, event, parent, after))
    if open_:
        raise ValueError(f"<{open_[-1][0]}> is not closed")
    return " ".join(text.split()), tags


def _keep_inside(tags: list[Tag], opened: int, first: int, last: int) -> None:
    """The lone tags inside the pair ``opened`` (words ``first..last``) that
    stand by a word outside it (a space, then the pair's end: no word of its
    own after them) stand by its first or last word instead."""
    for index in range(len(tags) - 1, -1, -1):
        tag = tags[index]
        if tag.opened < opened:
            break
        if tag.last is not None:
            continue
        if not tag.after and tag.first > last:
            tags[index] = replace(tag, first=last, after=True)
        elif tag.after and tag.first < first:
            tags[index] = replace(tag, first=first, after=False)


def _words_before(text: str, offset: int) -> int:
    return len(text[:offset].split())


def _lone_word(text: str, offset: int) -> tuple[int, bool]:
    """The word a lone tag at ``offset`` stands by: glued to the end of a
    word (a space or the end after it), after that word; else before the
    word at or after it."""
    glued_before = offset > 0 and not text[offset - 1].isspace()
    glued_after = offset < len(text) and not text[offset].isspace()
    if glued_before and not glued_after:
        return _words_before(text, offset) - 1, True
    return _words_before(text, offset) - glued_before, False


def _pair_words(text: str, start: int, end: int) -> tuple[int, int]:
    """The words a pair from ``start`` to ``end`` encloses (a pair inside
    a word: that word)."""
    glued = start > 0 and not text[start - 1].isspace() and bool(text[:start].split())
    first = _words_before(text, start) - glued
    return first, max(_words_before(text, end) - 1, first)


def restore_markup(translation: str, alignment: str, tags: list[Tag]) -> str:
    """``translation`` with ``tags`` put back where ``alignment`` (Pharaoh)
    carries their words (module docstring)."""
    words = translation.split()
    to_target: dict[int, list[int]] = {}
    for link in alignment.split():
        source, target = map(int, link.split("-"))
        if target < len(words):
            to_target.setdefault(source, []).append(target)
    spans = _target_spans(tags, to_target, len(words))
    before: dict[int, list[tuple[int, str]]] = {}
    after: dict[int, list[tuple[int, str]]] = {}
    trailing: list[tuple[int, str]] = []
    for tag in tags:
        span = spans.get(tag.opened)
        if span is None:  # at the end, in the order written
            trailing.append((tag.opened, tag.opening))
            if tag.last is not None:
                trailing.append((tag.closed, tag.closing))
        elif tag.last is None and tag.after:
            after.setdefault(span[1], []).append((tag.opened, tag.opening))
        elif tag.last is None:
            before.setdefault(span[0], []).append((tag.opened, tag.opening))
        else:
            before.setdefault(span[0], []).append((tag.opened, tag.opening))
            after.setdefault(span[1], []).append((tag.closed, tag.closing))
    marked = [
        "".join(t for _, t in sorted(before.get(i, [])))
        + word
        + "".join(t for _, t in sorted(after.get(i, [])))
        for i, word in enumerate(words)
    ]
    if trailing:
        marked.append("".join(t for _, t in sorted(trailing)))
    return " ".join(marked)


def _target_spans(
    tags: list[Tag], to_target: dict[int, list[int]], count: int
) -> dict[int, tuple[int, int]]:
    """Each placed tag's target words (first, last), by ``opened``: a pair
    within the pair around it and after its earlier siblings, so that the
    output nests; a tag with no room, or no aligned word, is left out."""
    spans: dict[int, tuple[int, int]] = {}
    last_end: dict[int | None, int] = {}  # per parent: its children's last word
    unplaced: set[int] = set()
    for tag in sorted(tags, key=lambda t: t.opened):
        if tag.parent in unplaced:  # inside a tag at the end: there too
            unplaced.add(tag.opened)
            continue
        words = range(tag.first, (tag.first if tag.last is None else tag.last) + 1)
        targets = sorted(t for s in words for t in to_target.get(s, []))
        low, high = (0, count - 1)
        if tag.parent is not None:
            low, high = spans[tag.parent]
        if tag.last is not None:
            low = max(low, last_end.get(tag.parent, -1) + 1)
        inside = [t for t in targets if low <= t <= high]
        if not inside:
            unplaced.add(tag.opened)
            continue
        spans[tag.opened] = (inside[0], inside[-1])
        if tag.last is not None:
            last_end[tag.parent] = inside[-1]
    return spans
