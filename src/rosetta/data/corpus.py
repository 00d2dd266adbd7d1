"""Reading parallel corpora: two aligned files or one TSV, plain or gzip.

Every problem is reported with the file, the line and what is wrong, because a
silently misaligned corpus trains a model that translates sentence n into
sentence n+1.
"""

from __future__ import annotations

import gzip
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rosetta.config.sections import CorpusFiles
from rosetta.data import hub
from rosetta.errors import RosettaError, where


@dataclass
class FilterReport:
    """How many pairs were read and why some were dropped."""

    read: int = 0
    kept: int = 0
    dropped: dict[str, int] = field(default_factory=dict)

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    def summary(self) -> str:
        if not self.dropped:
            return f"{self.kept} pairs"
        reasons = ", ".join(f"{n} {why}" for why, n in sorted(self.dropped.items()))
        return f"{self.kept} of {self.read} pairs kept ({reasons})"


MAX_LINE_BYTES = 16 * 2**20  # a line of text; far beyond any sentence


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` from a UTF-8 file, gzip if it ends in .gz.

    CRLF and LF line ends are both accepted; the line end is removed. A
    carriage return anywhere else (a file with CR-only line ends, which would
    read as one long line) is an error naming the line.
    """
    try:
        found, folder = path.exists(), path.is_dir()
    except OSError as error:  # a name too long for the file system, say
        raise RosettaError(f"{str(path)[:80]}: {error.strerror}") from None
    if not found:
        raise RosettaError(f"{path}: file not found")
    if folder:
        raise RosettaError(f"{path}: a folder, not a file of lines")
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            # lines of bounded length: a stream without line ends (/dev/zero)
            # is refused, not read into memory without end
            lines = iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b"")
            for number, raw in enumerate(lines, start=1):
                if len(raw) > MAX_LINE_BYTES:
                    raise RosettaError(
                        f"{where(path, number)}: a line longer than "
                        f"{MAX_LINE_BYTES // 2**20} MiB; is this a file of lines?"
                    )
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise RosettaError(
                        f"{where(path, number)}: invalid UTF-8 at byte "
                        f"{error.start} of the line"
                    ) from None
                text = text.removesuffix("\n").removesuffix("\r")
                if number == 1:  # a byte-order mark is the file's, not the text's
                    text = text.removeprefix("\ufeff")
                check_no_carriage_return(text, path, number)
                yield number, text
    except (OSError, EOFError) as error:  # unreadable, or a broken gzip stream
        raise RosettaError(f"{path}: cannot be read: {error}") from None


def check_no_carriage_return(text: str, path: Path | str, number: int) -> None:
    if "\r" in text:
        raise RosettaError(
            f"{where(path, number)}: a carriage return inside the line (a file "
            "with CR-only line ends?); convert them to newlines, e.g. "
            "tr '\\r' '\\n'"
        )


def stream_parallel(src_path: Path, tgt_path: Path) -> Iterator[tuple[str, str]]:
    """(source, target) pairs of two line-aligned files, one at a time."""
    src_lines, tgt_lines = read_lines(src_path), read_lines(tgt_path)
    count = 0
    for src, tgt in itertools.zip_longest(src_lines, tgt_lines):
        if src is None or tgt is None:  # one file ended first: count the other
            src_count = count + (src is not None) + sum(1 for _ in src_lines)
            tgt_count = count + (tgt is not None) + sum(1 for _ in tgt_lines)
            raise RosettaError(
                f"{src_path} has {src_count} lines but {tgt_path} has "
                f"{tgt_count}: parallel files must have one line per sentence pair"
            )
        count += 1
        yield src[1], tgt[1]
    if not count:
        raise RosettaError(f"{src_path}: empty corpus")


def stream_tsv(path: Path) -> Iterator[tuple[str, str]]:
    """``source<TAB>target[<TAB>anything]`` lines as pairs, one at a time;
    extra columns are ignored."""
    count = 0
    for number, text in read_lines(path):
        count += 1
        if not text.strip():
            yield "", ""
            continue
        columns = text.split("\t")
        if len(columns) < 2:
            raise RosettaError(
                f"{where(path, number)}: no tab found; expected source<TAB>target"
            )
        yield columns[0], columns[1]
    if not count:
        raise RosettaError(f"{path}: empty corpus")


def stream_corpus(files: CorpusFiles) -> Iterator[tuple[str, str]]:
    """The pairs a config's corpus section names, one at a time: a corpus of
    any size reads in constant memory."""
    if files.tsv is not None:
        return stream_tsv(files.tsv)
    if files.hf is not None:
        return hub.stream_hf(files)
    assert files.src is not None and files.tgt is not None
    return stream_parallel(files.src, files.tgt)


def read_parallel(src_path: Path, tgt_path: Path) -> list[tuple[str, str]]:
    """Read two line-aligned files into (source, target) pairs."""
    return list(stream_parallel(src_path, tgt_path))


def read_tsv(path: Path) -> list[tuple[str, str]]:
    """Read ``source<TAB>target[<TAB>anything]`` lines; extra columns are ignored."""
    return list(stream_tsv(path))


def read_corpus(files: CorpusFiles) -> list[tuple[str, str]]:
    """Read the pairs a config's corpus section names."""
    return list(stream_corpus(files))


def corpus_name(files: CorpusFiles) -> str:
    if files.hf is not None:
        return hub.describe(files)
    return str(files.tsv) if files.tsv is not None else f"{files.src} / {files.tgt}"
