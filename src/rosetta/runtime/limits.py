"""Every number a user gives, defined once: the kinds of value that flags,
config keys and request fields take, with their ranges.

Each kind is a pydantic type, so the config and the server's schemas use it
as a field type; ``check(kind, value, name)`` validates a value in code (the
search options), and ``flag(kind)`` makes it an argparse type. A value refused
in one place is refused in every other, for the same reason: not finite
(``inf``, ``nan``), out of range, or not a whole number (``true`` is not 1,
``2.5`` is not 2).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Annotated, Any, get_args

from pydantic import Field, Strict, TypeAdapter, ValidationError

# An output limit a·S + b far beyond any model's positions is a mistake; the
# bounds keep a·S + b a small integer, whatever S.
MAX_LEN_A = 1_000.0
MAX_LEN_B = 100_000
MAX_SEED = 2**63 - 1  # what every generator (torch, CTranslate2) accepts
MAX_NPD = 1_000  # noisy parallel decoding: candidates per sentence

Count = Annotated[int, Strict(), Field(ge=1)]
Size = Annotated[int, Strict(), Field(ge=0)]
Port = Annotated[int, Strict(), Field(ge=0, le=65_535)]
Seed = Annotated[int, Strict(), Field(ge=0, le=MAX_SEED)]
Candidates = Annotated[int, Strict(), Field(ge=0, le=MAX_NPD)]
NonNegative = Annotated[float, Strict(), Field(ge=0.0, allow_inf_nan=False)]
Positive = Annotated[float, Strict(), Field(gt=0.0, allow_inf_nan=False)]
Probability = Annotated[float, Strict(), Field(gt=0.0, le=1.0, allow_inf_nan=False)]
# Dividing logits by less than 1e-3 overflows them to inf, and the draw to nan.
Temperature = Annotated[float, Strict(), Field(ge=1e-3, le=1e3, allow_inf_nan=False)]
LengthRatio = Annotated[
    float, Strict(), Field(ge=0.0, le=MAX_LEN_A, allow_inf_nan=False)
]
LengthOffset = Annotated[int, Strict(), Field(ge=0, le=MAX_LEN_B)]
# Adam's moving-average rates: 1 or more never forgets, and the step divides
# by 1 - beta**t, zero at beta = 1.
Beta = Annotated[float, Field(ge=0.0, lt=1.0, allow_inf_nan=False)]

_ADAPTERS: dict[str, TypeAdapter] = {}


def _adapter(kind: Any) -> TypeAdapter:
    # by the kind's text, which names its constraints: ``Count | None`` made
    # anew at each call is still one entry
    key = repr(kind)
    if key not in _ADAPTERS:
        _ADAPTERS[key] = TypeAdapter(kind)
    return _ADAPTERS[key]


def reason(error: ValidationError) -> str:
    """Pydantic's complaint in one line, as ``field: must ...``."""
    parts = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"])
        message = item["msg"].replace("Input should", "must")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)


def check(kind: Any, value: object, name: str) -> Any:
    """``value`` as ``kind`` allows it; ``ValueError`` naming ``name`` if not."""
    try:
        return _adapter(kind).validate_python(value)
    except ValidationError as error:
        raise ValueError(f"{name} {reason(error)}, got {value!r}") from None


def _is_whole(kind: object) -> bool:
    return get_args(kind)[0] is int


def flag(kind: Any) -> Callable[[str], Any]:
    """An argparse ``type`` for ``kind``: ``--beam 0`` and ``--max-len-a inf``
    end in a one-line usage error before any work."""
    whole = _is_whole(kind)

    def parse(text: str) -> Any:
        try:
            value = int(text) if whole else float(text)
        except ValueError:
            expected = "a whole number" if whole else "a number"
            raise argparse.ArgumentTypeError(
                f"expected {expected}, got {text!r}"
            ) from None
        try:
            return _adapter(kind).validate_python(value)
        except ValidationError as error:
            raise argparse.ArgumentTypeError(f"{reason(error)}, got {text}") from None

    parse.__name__ = "whole number" if whole else "number"
    return parse


def number_flag(
    verb: argparse._ActionsContainer,
    name: str,
    kind: Any,
    meaning: str,
    default: object = None,
    **more: Any,
) -> None:
    """``name`` (``--beam``) taking a number of ``kind``, refused before any
    work when out of range (``flag``); ``more`` as for ``add_argument``."""
    verb.add_argument(name, type=flag(kind), default=default, help=meaning, **more)
