"""The numeric precisions by name (``rosetta.runtime.precision`` says what
each does). No PyTorch here: the command line's help lists them."""

from __future__ import annotations

from typing import Literal, get_args

Precision = Literal["fp32", "bf16", "fp16", "int8"]
PRECISIONS: tuple[str, ...] = get_args(Precision)
