"""How a synthetic pair is written: the formats of ``rosetta task --format``.

- ``plain``: the symbols as the task makes them (``4 7 + 8 5 -> 1 3 2``).
- ``padded`` (additions): both numbers written with zeros in front to the
  longer one's length, and the sum to one digit more, so that the digits of
  one significance stand at the same place in every number:
  ``0 4 7 + 1 8 5 -> 0 2 3 2`` (``addition``; a number written least
  significant digit first, as in ``addition-lsb``, pads at the
  end: ``7 4 0 + 5 8 1 -> 2 3 2 0``).
- ``hints``: every symbol follows an *index hint*, a token ``hk`` (the
  letter h and a number: one word to every tokenizer) that names
  its place, so that a model can find the symbol an output needs by
  matching hints rather than by counting. In a copy, reversal, sort or
  duplicate, ``k`` is the place of the source symbol (the output symbol's
  hint is that of the source symbol it repeats); in an addition, ``k`` is
  the digit's significance (units ``h0``, tens ``h1``, ...) in both numbers
  and the sum: ``h1 4 h0 7 + h1 8 h0 5 -> h2 1 h1 3 h0 2``. Training pairs
  add one offset, drawn per pair from ``0 .. hint_range − n``, to every hint
  (``n`` the hints the pair needs), so that every hint up to ``hint_range``
  is trained and a longer test pair, written from ``h0``, meets none new;
  validation and test pairs are written from ``h0``.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from rosetta.errors import RosettaError

Symbols = list[str]
FORMATS = ("plain", "padded", "hints")


def is_hint(symbol: str) -> bool:
    """``h0``, ``h1``, ...: an index hint."""
    return symbol[:1] == "h" and symbol[1:].isdigit()


def split_addition(source: Symbols) -> tuple[Symbols, Symbols]:
    plus = source.index("+")
    return source[:plus], source[plus + 1 :]


def least_first(task: str, side: str) -> bool:
    """Whether an addition's ``source`` or ``target`` numbers are written
    least significant digit first."""
    if side == "source":
        return task == "addition-lsb"
    return task in ("addition-lsb", "addition-reversed")


def padded(task: str, source: Symbols, target: Symbols) -> tuple[Symbols, Symbols]:
    """Both numbers to the longer's length, the sum to one digit more."""
    left, right = split_addition(source)
    width = max(len(left), len(right))

    def pad(number: Symbols, size: int, side: str) -> Symbols:
        zeros = ["0"] * (size - len(number))
        return [*number, *zeros] if least_first(task, side) else [*zeros, *number]

    source = [*pad(left, width, "source"), "+", *pad(right, width, "source")]
    return source, pad(target, width + 1, "target")


def significance(number: Symbols, task: str, side: str) -> list[int]:
    """Each digit's significance: units 0, tens 1, ..."""
    places = list(range(len(number)))
    return places if least_first(task, side) else places[::-1]


def source_places(task: str, source: Symbols, target: Symbols) -> list[int]:
    """For every target symbol, the place in the source of the symbol it
    repeats (copy, reverse, duplicate, a stable sort)."""
    count = len(source)
    if task == "copy":
        return list(range(count))
    if task == "reverse":
        return list(range(count))[::-1]
    if task == "duplicate":
        return [*range(count), *range(count)]
    if task == "sort":
        rank = {symbol: index for index, symbol in enumerate(dict.fromkeys(target))}
        return sorted(range(count), key=lambda place: rank[source[place]])
    raise RosettaError(f"no index hints for task {task!r}")


def interleave(hints: list[int], symbols: Symbols, offset: int) -> Symbols:
    return [
        token
        for k, s in zip(hints, symbols, strict=True)
        for token in (f"h{k + offset}", s)
    ]


def hinted(
    task: str, source: Symbols, target: Symbols, offset: int
) -> tuple[Symbols, Symbols]:
    """The pair with index hints (module docstring), every hint + ``offset``."""
    if task.startswith("addition"):
        left, right = split_addition(source)
        return (
            [
                *interleave(significance(left, task, "source"), left, offset),
                "+",
                *interleave(significance(right, task, "source"), right, offset),
            ],
            interleave(significance(target, task, "target"), target, offset),
        )
    places = source_places(task, source, target)
    return (
        interleave(list(range(len(source))), source, offset),
        interleave(places, target, offset),
    )


def hints_needed(task: str, source: Symbols, target: Symbols) -> int:
    """How many hints (``h0 .. hn−1``) the pair uses before any offset."""
    return len(target) if task.startswith("addition") else len(source)


def check_format(task: str, name: str, hint_range: int, longest: int) -> None:
    """A clear error for a format the task cannot take."""
    if name not in FORMATS:
        raise RosettaError(f"unknown format {name!r}; use one of: {', '.join(FORMATS)}")
    if name == "padded" and not task.startswith("addition"):
        raise RosettaError(f"--format padded is for additions, not {task}")
    if name == "hints" and hint_range < longest:
        raise RosettaError(
            f"--hint-range {hint_range} is shorter than the longest pair's "
            f"{longest} places: give at least {longest}"
        )


def formatter(
    task: str, name: str, hint_range: int
) -> Callable[[Symbols, Symbols, random.Random | None], tuple[Symbols, Symbols]]:
    """``(source, target, rng) -> written pair``; ``rng`` draws the hints'
    offset (training pairs), None writes them from ``h0``."""

    def write(
        source: Symbols, target: Symbols, rng: random.Random | None
    ) -> tuple[Symbols, Symbols]:
        if name == "padded":
            return padded(task, source, target)
        if name == "hints":
            spare = hint_range - hints_needed(task, source, target)
            offset = rng.randint(0, spare) if rng is not None and spare > 0 else 0
            return hinted(task, source, target, offset)
        return source, target

    return write
