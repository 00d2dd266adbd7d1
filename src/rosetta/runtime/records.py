"""Every JSON file Rosetta reads back is a boundary: parsed through one
schema, and any failure is one line naming the file and the field.

A run's files are Rosetta's own, but they can be cut short by a full disk,
edited by hand, or written by another version; what is read from them is
checked here before any of it is used, never trusted into a ``KeyError``
deep inside training.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from rosetta.errors import RosettaError
from rosetta.runtime.limits import reason
from rosetta.runtime.own_files import read_own

T = TypeVar("T")


class Record(BaseModel):
    """A file's schema: the fields Rosetta reads; others are kept, so that a
    file written by a newer version still reads."""

    model_config = ConfigDict(extra="allow")


def parse_record(data: object, schema: type[T], where: str, what: str) -> T:
    """``data`` (already parsed) as ``schema``; a ``RosettaError`` naming
    ``where`` and the first fields that do not fit otherwise."""
    try:
        return TypeAdapter(schema).validate_python(data)
    except ValidationError as error:
        raise RosettaError(f"{where}: not {what} ({reason(error)})") from None


def read_record(
    path: Path, schema: type[T], what: str, *, follow_links: bool = False
) -> T:
    """The JSON file ``path`` as ``schema`` (``what`` it should be, e.g. "a
    token store manifest"), or one line saying why not.

    The file is opened as Rosetta's own (``rosetta.runtime.own_files``: not
    through a link unless ``follow_links``, a plain file of bounded size) and
    parsed with a bounded nesting depth."""
    try:
        text = read_own(Path(path), follow_links=follow_links)
    except FileNotFoundError:
        raise RosettaError(f"{path}: missing ({what})") from None
    except OSError as error:
        raise RosettaError(f"{path}: unreadable ({error.strerror})") from None
    try:
        return TypeAdapter(schema).validate_json(text)
    except ValidationError as error:
        raise RosettaError(f"{path}: not {what} ({reason(error)})") from None


def read_checked(path: Path, schema: type[Record], what: str) -> dict[str, Any]:
    """The JSON object in ``path``, exactly as written (for checksums over
    it), once it has been checked against ``schema``."""
    data = read_record(path, dict[str, Any], what)
    parse_record(data, schema, str(path), what)
    return data
