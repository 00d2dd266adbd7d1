"""Synthetic sequence-to-sequence tasks, written as ordinary parallel files.

Each task maps a sequence of symbols to another:

    copy       a b c      -> a b c
    reverse    a b c      -> c b a
    sort       c a b      -> a b c          (in the alphabet's order)
    duplicate  a b c      -> a b c a b c
    addition   4 7 + 8 5  -> 1 3 2          (two n-digit numbers, their sum)
    addition-lsb 7 4 + 5 8 -> 2 3 1         (the same, least significant digit first)
    addition-reversed 4 7 + 8 5 -> 2 3 1    (the numbers as written, the sum reversed)

``write_task`` draws training, validation and test pairs with source lengths
in one range, and further test sets at longer length bands, never seen in
training, so that every model and command can be trained and evaluated on
them unchanged: ``rosetta train`` on ``train.src``/``train.tgt``,
``rosetta evaluate`` on each test band. A test or validation source never
occurs in the training set. The length of an addition is the digits of
each number. Written least significant digit first, each digit of a sum
depends only on digits already read and a carry, which is what sequence
models find easiest to learn; most significant first, the carry must be
worked out before the digits it comes from are read back. With
``operands="independent"`` the two numbers of an addition take their
lengths from the range each on its own. ``rosetta.data.task_formats``
writes the pairs padded or with index hints.
"""

from __future__ import annotations

import json
import random
import string
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rosetta.data.task_formats import check_format, formatter, is_hint
from rosetta.errors import RosettaError

Symbols = list[str]

DIGITS = list(string.digits)
TASK_FILE = "task.json"  # what was drawn: marks a folder as written by write_task
MAX_LENGTH = 100_000  # symbols per source (per number in an addition)


def _sorted(source: Symbols, alphabet: Symbols) -> Symbols:
    rank = {symbol: index for index, symbol in enumerate(alphabet)}
    return sorted(source, key=rank.__getitem__)


def _add(source: Symbols, alphabet: Symbols) -> Symbols:
    """Column by column, as on paper: numbers of any length (Python's ``int``
    refuses to read more than 4,300 digits)."""
    plus = source.index("+")
    left, right = source[:plus][::-1], source[plus + 1 :][::-1]
    digits, carry = [], 0
    for column in range(max(len(left), len(right))):
        total = carry
        total += int(left[column]) if column < len(left) else 0
        total += int(right[column]) if column < len(right) else 0
        digits.append(str(total % 10))
        carry = total // 10
    digits.append(str(carry))
    while len(digits) > 1 and digits[-1] == "0":  # no leading zeros
        digits.pop()
    return digits[::-1]


def _add_lsb_first(source: Symbols, alphabet: Symbols) -> Symbols:
    plus = source.index("+")
    left, right = source[:plus], source[plus + 1 :]
    return _add([*reversed(left), "+", *reversed(right)], alphabet)[::-1]


TARGETS: dict[str, Callable[[Symbols, Symbols], Symbols]] = {
    "copy": lambda source, alphabet: list(source),
    "reverse": lambda source, alphabet: source[::-1],
    "sort": _sorted,
    "duplicate": lambda source, alphabet: source + source,
    "addition": _add,
    "addition-lsb": _add_lsb_first,
    "addition-reversed": lambda source, alphabet: _add(source, alphabet)[::-1],
}
TASKS = tuple(TARGETS)
ARITHMETIC = ("addition", "addition-lsb", "addition-reversed")


def target_of(task: str, source: Symbols, alphabet: Symbols) -> Symbols:
    """What ``task`` maps ``source`` to."""
    if task not in TARGETS:
        raise RosettaError(f"unknown task {task!r}; use one of: {', '.join(TASKS)}")
    return TARGETS[task](source, alphabet)


def draw_source(
    task: str,
    length: int,
    alphabet: Symbols,
    rng: random.Random,
    other_length: int | None = None,
) -> Symbols:
    """A random source of ``length`` (for addition: two numbers of ``length``
    digits, or ``length`` and ``other_length``, without leading zeros)."""
    if task not in ARITHMETIC:
        return [rng.choice(alphabet) for _ in range(length)]

    def number(size: int) -> Symbols:
        first = rng.choice(DIGITS[1:] if size > 1 else DIGITS)
        digits = [first, *(rng.choice(DIGITS) for _ in range(size - 1))]
        return digits[::-1] if task == "addition-lsb" else digits

    right = length if other_length is None else other_length
    return [*number(length), "+", *number(right)]


def parse_band(text: str) -> tuple[int, int]:
    """``"41-80"`` -> (41, 80); ``"7"`` -> (7, 7)."""
    low, dash, high = text.partition("-")
    try:
        band = int(low), int(high if dash else low)
    except ValueError:
        raise RosettaError(
            f"length band {text!r}: expected LOW-HIGH, e.g. 1-40"
        ) from None
    if not 1 <= band[0] <= band[1] <= MAX_LENGTH:
        raise RosettaError(
            f"length band {text!r}: need 1 <= LOW <= HIGH <= {MAX_LENGTH}"
        )
    return band


@dataclass(frozen=True)
class TaskSpec:
    task: str
    lengths: tuple[int, int] = (1, 40)
    count: int = 10000  # training pairs
    valid: int = 500
    test: int = 500  # per test set
    bands: tuple[tuple[int, int], ...] = ((41, 80), (81, 120), (121, 200))
    alphabet: list[str] = field(default_factory=lambda: list("abcdefghij"))
    seed: int = 1
    operands: str = "equal"  # an addition's two lengths: "equal" or "independent"
    format: str = "plain"  # rosetta.data.task_formats.FORMATS
    hint_range: int = 256  # hints h0 .. h{hint_range-1} (format "hints")


def _draw(
    spec: TaskSpec,
    band: tuple[int, int],
    count: int,
    rng: random.Random,
    excluded: set[tuple[str, ...]],
    name: str,
) -> list[Symbols]:
    """``count`` sources with lengths uniform in ``band``, none in ``excluded``
    (the sources drawn are added to it)."""
    alphabet = DIGITS if spec.task in ARITHMETIC else spec.alphabet
    drawn: list[Symbols] = []
    attempts = 0
    while len(drawn) < count:
        attempts += 1
        if attempts > 100 * count + 1000:
            raise RosettaError(
                f"{name}: cannot draw {count} distinct sources of lengths "
                f"{band[0]}-{band[1]} apart from the other splits; use more "
                "symbols, longer lengths or fewer pairs"
            )
        other = rng.randint(*band) if spec.operands == "independent" else None
        source = draw_source(spec.task, rng.randint(*band), alphabet, rng, other)
        key = tuple(source)
        if key not in excluded:
            excluded.add(key)
            drawn.append(source)
    return drawn


def _length(spec: TaskSpec, source: Symbols) -> int:
    """A source's length: its longer number's digits in an addition."""
    if spec.task not in ARITHMETIC:
        return len(source)
    plus = source.index("+")
    return max(plus, len(source) - plus - 1)


def _possible_sources(spec: TaskSpec, length: int) -> int:
    if spec.task in ARITHMETIC:  # two numbers without leading zeros
        return (10 if length == 1 else 9 * 10 ** (length - 1)) ** 2
    return len(spec.alphabet) ** length


def _warn_unseen_lengths(spec: TaskSpec, held_out: list[Symbols]) -> None:
    """Short lengths have few distinct sources; when the test and validation
    sets take them all, training can never see that length: say so."""
    taken = Counter(_length(spec, source) for source in held_out)
    missing = [
        length
        for length, count in sorted(taken.items())
        if spec.lengths[0] <= length <= spec.lengths[1]
        and count >= _possible_sources(spec, length)
    ]
    if missing and spec.count:
        warnings.warn(
            f"no training source of length {', '.join(map(str, missing))}: the "
            "test and validation sets hold every source of that length (use "
            "more symbols, or start the lengths higher)",
            stacklevel=3,
        )


def write_split(
    folder: Path,
    name: str,
    sources: list[Symbols],
    spec: TaskSpec,
    rng: random.Random | None = None,
) -> None:
    """``name.src``/``name.tgt`` in ``spec.format``; ``rng`` draws the index
    hints' offsets (training pairs only)."""
    alphabet = DIGITS if spec.task in ARITHMETIC else spec.alphabet
    write = formatter(spec.task, spec.format, spec.hint_range)
    pairs = [
        write(source, target_of(spec.task, source, alphabet), rng) for source in sources
    ]
    (folder / f"{name}.src").write_text("".join(" ".join(s) + "\n" for s, _ in pairs))
    (folder / f"{name}.tgt").write_text("".join(" ".join(t) + "\n" for _, t in pairs))


def write_task(spec: TaskSpec, folder: Path) -> dict[str, int]:
    """Write ``train``, ``valid``, ``test`` and ``test-LOW-HIGH`` for every band
    as ``NAME.src``/``NAME.tgt`` in ``folder``, and ``task.json``; returns the
    pairs per split. Test and validation sets are drawn first, so that the
    training set can leave their sources out."""
    if spec.task not in TARGETS:
        raise RosettaError(
            f"unknown task {spec.task!r}; use one of: {', '.join(TASKS)}"
        )
    if spec.task not in ARITHMETIC and not spec.alphabet:
        raise RosettaError("the alphabet is empty: give at least one symbol")
    if spec.task == "sort" and len(set(spec.alphabet)) != len(spec.alphabet):
        raise RosettaError("sort: the alphabet repeats a symbol")
    if any(not symbol or symbol.isspace() or " " in symbol for symbol in spec.alphabet):
        raise RosettaError(
            "the alphabet's symbols must be non-empty and without spaces"
        )
    if spec.operands not in ("equal", "independent"):
        raise RosettaError(f"operands: 'equal' or 'independent', not {spec.operands!r}")
    if spec.operands == "independent" and spec.task not in ARITHMETIC:
        raise RosettaError("independent operand lengths are for additions")
    if spec.format == "hints" and any(is_hint(s) for s in spec.alphabet):
        raise RosettaError(
            "index hints are h and a number (h0, h1, ...): the alphabet cannot hold one"
        )
    check_format(spec.task, spec.format, spec.hint_range, longest_places(spec))
    rng = random.Random(spec.seed)
    folder.mkdir(parents=True, exist_ok=True)
    seen: set[tuple[str, ...]] = set()
    splits = {
        "test": _draw(spec, spec.lengths, spec.test, rng, seen, "test"),
        "valid": _draw(spec, spec.lengths, spec.valid, rng, seen, "valid"),
    }
    for band in spec.bands:
        name = f"test-{band[0]}-{band[1]}"
        splits[name] = _draw(spec, band, spec.test, rng, seen, name)
    splits["train"] = _draw(spec, spec.lengths, spec.count, rng, seen, "train")
    _warn_unseen_lengths(spec, [*splits["test"], *splits["valid"]])
    hint_offsets = random.Random(f"{spec.seed}-hints")
    for name, sources in splits.items():
        write_split(
            folder, name, sources, spec, hint_offsets if name == "train" else None
        )
    counts = {name: len(sources) for name, sources in splits.items()}
    (folder / TASK_FILE).write_text(
        json.dumps({**asdict(spec), "pairs": counts}, indent=1)
    )
    return counts


def longest_places(spec: TaskSpec) -> int:
    """The most places a pair of the task can have: index hints to name."""
    longest = max(high for _, high in (spec.lengths, *spec.bands))
    return longest + 1 if spec.task in ARITHMETIC else longest  # a sum's carry


@dataclass(frozen=True)
class Accuracy:
    """How many outputs equal their reference (``exact``), and how many
    positions do (``per_token``: symbol ``i`` of the output against symbol
    ``i`` of the reference, over the longer of the two, so that a symbol too
    many or too few counts as one wrong)."""

    exact: float
    per_token: float
    sentences: int


def accuracy(hypotheses: list[str], references: list[str]) -> Accuracy:
    """Exact-sequence and per-token accuracy of space-separated outputs."""
    if len(hypotheses) != len(references):
        raise RosettaError(
            f"{len(hypotheses)} outputs for {len(references)} references"
        )
    exact = right = positions = 0
    for hypothesis, reference in zip(hypotheses, references, strict=True):
        output, wanted = hypothesis.split(), reference.split()
        exact += output == wanted
        right += sum(a == b for a, b in zip(output, wanted, strict=False))
        positions += max(len(output), len(wanted))
    count = len(references)
    return Accuracy(
        exact=exact / count if count else 0.0,
        per_token=right / positions if positions else 0.0,
        sentences=count,
    )
