"""Long text for language models: one file read in blocks of lines, and its
tokens laid out as parallel streams cut into consecutive segments.

A text of ``T`` tokens becomes ``n`` streams of ``T // n`` consecutive tokens
(the tail that does not fill a row is left out), one stream per batch row.
Segment ``s`` is columns ``s·L .. s·L + L − 1`` of every row, and its labels
are the same columns shifted by one. Consecutive segments continue each
row's text, so what a model remembers from segment ``s`` is the text right
before segment ``s + 1`` in the same row.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from rosetta.data.corpus import check_no_carriage_return
from rosetta.data.tokenizer import CharacterTokenizer, Tokenizer
from rosetta.data.vocab import EOS_ID
from rosetta.errors import RosettaError, where

BLOCK_BYTES = 1 << 20  # what a text is read in: about a megabyte of whole lines


def text_blocks(
    path: Path, block_bytes: int | None = None, lines_only: bool = False
) -> Iterator[str]:
    """The UTF-8 file (gzip if it ends in .gz) in blocks of whole lines of
    about ``block_bytes`` (default ``BLOCK_BYTES``), line ends as they are:
    their join is the text, and no more than a block is held at a time.

    With ``lines_only`` (a model that reads lines: words or subwords, each line
    ending in ``<eos>``), a carriage return that does not end a line is an
    error naming the line: CR-only line ends would read as one line."""
    if not path.is_file():
        raise RosettaError(f"{path}: file not found")
    opener = gzip.open if path.suffix == ".gz" else open
    lines_before = 0
    try:
        with opener(path, "rb") as handle:
            while lines := handle.readlines(block_bytes or BLOCK_BYTES):
                raw = b"".join(lines)
                try:
                    block = raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise bad_utf8(path, raw, error.start, lines_before) from None
                if lines_only:
                    check_line_ends(block, path, lines_before)
                yield block
                lines_before += len(lines)
    except (OSError, EOFError) as error:  # unreadable, or a broken gzip stream
        raise RosettaError(f"{path}: cannot be read: {error}") from None


def bad_utf8(path: Path, raw: bytes, start: int, lines_before: int) -> RosettaError:
    line = lines_before + raw[:start].count(b"\n") + 1
    column = start - (raw.rfind(b"\n", 0, start) + 1)
    return RosettaError(
        f"{where(path, line)}: invalid UTF-8 at byte {column} of the line"
    )


def read_text(path: Path, lines_only: bool = False) -> str:
    """The whole UTF-8 file (gzip if it ends in .gz), line ends as they are
    (``lines_only``: as for ``text_blocks``)."""
    return "".join(text_blocks(path, lines_only=lines_only))


def check_line_ends(block: str, path: Path, lines_before: int) -> None:
    """No carriage return in ``block`` but before a newline (CRLF)."""
    start = block.find("\r")
    while start != -1:
        if block[start + 1 : start + 2] != "\n":
            line = lines_before + block.count("\n", 0, start) + 1
            check_no_carriage_return("\r", path, line)
        start = block.find("\r", start + 1)


def encode_text(tokenizer: Tokenizer, text: str) -> list[int]:
    """A whole text as one sequence of ids. Characters include the line
    breaks; a subword or word tokenizer encodes line by line and ends each
    line with ``<eos>``, which stands for the break."""
    if isinstance(tokenizer, CharacterTokenizer):
        return tokenizer.encode(text)
    ids: list[int] = []
    for line in text.splitlines():
        ids += tokenizer.encode(line)
        ids.append(EOS_ID)
    return ids


def decode_text(tokenizer: Tokenizer, ids: list[int]) -> str:
    """The text of ``ids``; ``<eos>`` becomes a line break (see encode_text)."""
    if isinstance(tokenizer, CharacterTokenizer):
        return tokenizer.decode(ids)
    lines, start = [], 0
    for index, token in enumerate(ids):
        if token == EOS_ID:
            lines.append(tokenizer.decode(ids[start:index]))
            start = index + 1
    if start < len(ids):
        return "\n".join([*lines, tokenizer.decode(ids[start:])])
    return "".join(line + "\n" for line in lines)


@dataclass(frozen=True)
class TokenStreams:
    """Token ids (n, T) in ``n`` parallel streams; see the module docstring.
    ``rows`` may view a mapped token store: only the segments asked for are
    read, and copied as int64 tensors."""

    rows: np.ndarray

    @classmethod
    def of(cls, ids: Sequence[int] | np.ndarray, streams: int) -> TokenStreams:
        """``ids``: a list, or an array (as the token store maps it)."""
        per_row = len(ids) // streams
        if per_row < 2:
            raise RosettaError(
                f"{len(ids)} tokens cannot fill {streams} streams of at least 2"
            )
        kept = np.asarray(ids[: per_row * streams])
        return cls(kept.reshape(streams, per_row))

    def segments(self, length: int) -> int:
        """How many segments of ``length`` inputs (each with its next-token
        labels) the streams hold; the last one may be shorter."""
        return -(-(self.rows.shape[1] - 1) // length)

    def segment(self, index: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(inputs, labels), each (n, ≤ length): segment ``index``."""
        start = index * length
        end = min(start + length, self.rows.shape[1] - 1)
        if not 0 <= start < end:
            raise IndexError(f"segment {index} of {self.segments(length)}")
        inputs, labels = self.rows[:, start:end], self.rows[:, start + 1 : end + 1]
        return (
            torch.from_numpy(inputs.astype(np.int64)),
            torch.from_numpy(labels.astype(np.int64)),
        )
