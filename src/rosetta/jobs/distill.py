"""Sequence-level knowledge distillation: a training corpus translated by a
trained model, for another model to learn from.

A non-autoregressive student learns far better from a teacher's
translations than from the human references: the teacher settles each
source on one consistent translation, where references mix several, and a
model that predicts every token at once cannot pick one of many (it
blends them). ``distill`` writes the teacher's beam-search output, one line
per source line, resumably: finished chunks are appended to
``OUTPUT.partial`` and flushed to disk, so a run that is stopped carries on
from the last finished chunk, and the output file appears, whole, only at
the end.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import xxhash
from pydantic import BaseModel, ConfigDict, Field

from rosetta.errors import RosettaError
from rosetta.inference.text_translator import TextTranslator
from rosetta.runtime.atomic import write_json_atomic
from rosetta.runtime.fingerprint import KIND
from rosetta.runtime.own_files import open_own
from rosetta.runtime.progress import SentenceProgress
from rosetta.runtime.records import parse_record, read_record
from rosetta.search.batched import Workers
from rosetta.search.options import SearchOptions

DONE = "done"  # the record's progress: the finished bytes and their hash


def partial_paths(output: Path) -> tuple[Path, Path]:
    """Where an unfinished run keeps its lines and what they were made from."""
    return (
        output.with_name(output.name + ".partial"),
        output.with_name(output.name + ".partial.json"),
    )


class Progress(BaseModel):
    """How far a run got, as its record vouches: the finished bytes of the
    partial output and their fingerprint."""

    model_config = ConfigDict(strict=True, extra="forbid")
    finished: int = Field(alias="bytes", ge=0)
    fingerprint: str = Field(alias=KIND)


def finished_lines(partial: Path, done: Any) -> tuple[int, int, Any]:
    """Lines a stopped run finished, as its record vouches for them (``done``,
    a ``Progress``), their bytes, and the running hash of them. What follows
    them (a chunk written as the process was killed, lines added by hand) is
    cut off and translated again; finished lines that changed since are
    refused, never taken for the teacher's."""
    digest = xxhash.xxh3_128()
    size, expected = 0, digest.hexdigest()
    if done is not None:
        where = f"{partial}: its record's progress"
        vouched = parse_record(done, Progress, where, "bytes and a fingerprint")
        size, expected = vouched.finished, vouched.fingerprint
    if not partial.is_file():
        return 0, 0, digest
    # Rosetta's own file, written in place: never through a link or a
    # second name of a user's file (``rosetta.runtime.own_files``)
    with os.fdopen(open_own(partial, os.O_RDWR, writing=True, limit=None), "r+b") as f:
        # never more than the file holds, and only whole lines (chunks end so)
        data = f.read(min(size, os.fstat(f.fileno()).st_size))
        digest.update(data)
        whole = not data or data.endswith(b"\n")
        if len(data) != size or not whole or digest.hexdigest() != expected:
            raise RosettaError(
                f"{partial}: its finished lines changed since rosetta distill "
                "wrote them; delete it and its .json record to start again"
            )
        f.truncate(size)
    return data.count(b"\n"), size, digest


def changes(earlier: Any, now: Any, prefix: str = "") -> list[str]:
    """What differs between two records, as ``key: earlier -> now``."""
    if not (isinstance(earlier, dict) and isinstance(now, dict)):
        return (
            [] if earlier == now else [f"{prefix or 'record'}: {earlier!r} -> {now!r}"]
        )
    found = []
    for key in [*earlier, *(key for key in now if key not in earlier)]:
        place = f"{prefix}.{key}" if prefix else str(key)
        found += changes(earlier.get(key), now.get(key), place)
    return found


def started_with(sources: Sequence[str], what: dict) -> dict:
    """The record of what a run translates: the sources and ``what``."""
    digest = hashlib.sha256("\n".join(sources).encode("utf-8")).hexdigest()
    made_of = {"sources_sha256": digest, "lines": len(sources), **what}
    # as the record reads back: JSON has lists where ``what`` may have tuples
    # (a search's banned phrases), and a resumed run must compare equal
    return json.loads(json.dumps(made_of))


def check_partial(output: Path, made_of: dict) -> tuple[bool, Any]:
    """Whether a stopped run left ``output``'s partial output, started with
    ``made_of``, and how far it got (``finished_lines``); refused if another
    run (other sources or settings, or not ``distill``) left it."""
    partial, record = partial_paths(output)
    if record.is_file():
        earlier = read_record(record, Any, "a record of rosetta distill")
        progress = earlier.pop(DONE, None) if isinstance(earlier, dict) else None
        if earlier != made_of:
            raise RosettaError(
                f"{partial} was started with other sources or settings "
                f"({'; '.join(changes(earlier, made_of))}); run the command it "
                f"was started with, or delete it and {record.name} to start again"
            )
        return True, progress
    if partial.exists() or partial.is_symlink():
        raise RosettaError(
            f"{partial} exists and was not started by rosetta distill (no "
            f"{record.name} beside it); move it, or choose another output"
        )
    return False, None


def distill(
    translator: TextTranslator,
    sources: Sequence[str],
    output: Path,
    options: SearchOptions,
    *,
    what: dict,
    chunk_lines: int = 1000,
    batch_size: int | None = None,
    workers: Workers = 1,
    progress: bool = True,
) -> int:
    """Translate ``sources`` into ``output`` (module docstring); returns how
    many lines this call translated.

    ``what`` names the run (teacher, search) in the record beside the
    partial output: resuming with other sources or another ``what`` is an
    error, not a mixed file."""
    partial, record = partial_paths(output)
    made_of = started_with(sources, what)
    started, vouched = check_partial(output, made_of)
    if not started:
        output.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(record, made_of)
    done, size, digest = finished_lines(partial, vouched)
    if done > len(sources):
        raise RosettaError(f"{partial} has more lines than the sources")
    bar = SentenceProgress(len(sources), "distill", initial=done, shown=progress)
    tokens = 0
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    fd = open_own(partial, flags, writing=True, limit=None)
    with os.fdopen(fd, "ab") as handle:
        for start in range(done, len(sources), chunk_lines):
            chunk = list(sources[start : start + chunk_lines])
            found = translator.translate_nbest(
                chunk,
                options,
                batch_size=batch_size,
                workers=workers,
                progress=bar.update,
            )
            best = [ts[0] if ts else None for ts in found]
            tokens += sum(len(t.token_ids) for t in best if t is not None)
            lines = [t.text if t is not None else "" for t in best]
            text = "".join(line + "\n" for line in lines).encode("utf-8")
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
            size += len(text)
            digest.update(text)  # then the record vouches for the chunk
            finished = {"bytes": size, KIND: digest.hexdigest()}
            write_json_atomic(record, {**made_of, DONE: finished})
    os.replace(partial, output)
    record.unlink()
    if progress:  # on a terminal or not: one line
        bar.say_summary(tokens)
    return len(sources) - done
