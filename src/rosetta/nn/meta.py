"""Building a model on PyTorch's ``meta`` device, which records shapes and
holds no data, to learn its size before allocating it.

Initialising a meta tensor does nothing, but PyTorch runs some initialisers
(``normal_``) on meta tensors through its Python reference implementations,
whose first use imports the compiler stack (about 2 seconds on a 2-core
machine, most of a one-sentence ``rosetta translate``). ``on_meta`` skips
every in-place operation on a meta tensor instead (there is nothing to
write), and makes ``arange`` on the CPU: a table computed from positions
(sinusoids, slopes) is then a small CPU buffer, whose size does not count.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.overrides import TorchFunctionMode


class _SkipInPlaceOnMeta(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None) -> Any:
        name = getattr(func, "__name__", "")
        in_place = name.endswith("_") and not name.endswith("__")  # not __get__
        kwargs = kwargs or {}
        # a method's tensor comes first; torch.nn.init passes it as tensor=
        first = args[0] if args else kwargs.get("tensor")
        if in_place and isinstance(first, torch.Tensor) and first.is_meta:
            return first
        if func is torch.arange and "device" not in kwargs:
            return func(*args, **kwargs, device="cpu")
        return func(*args, **kwargs)


@contextmanager
def on_meta() -> Iterator[None]:
    """Modules made inside are on the ``meta`` device, left uninitialised."""
    with torch.device("meta"), _SkipInPlaceOnMeta():
        yield


# the initialisers of torch.nn.init that modules call when they are made
INITIALISERS = (
    "uniform_",
    "normal_",
    "trunc_normal_",
    "constant_",
    "ones_",
    "zeros_",
    "eye_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "orthogonal_",
)


_PATCHED = threading.RLock()  # one thread at a time, entries nested in it


@contextmanager
def uninitialised() -> Iterator[None]:
    """Modules made inside keep their parameters as allocated: every
    ``torch.nn.init`` initialiser does nothing. For a model whose every
    weight is loaded next (``rosetta.runs.weights.load_weights`` refuses a
    file that lacks one), drawing 600M random numbers first would only cost
    time; tables computed from positions are computed as ever. The
    initialisers are the process's: while one thread is inside, another
    waits to enter, and the outermost entry puts them back."""
    with _PATCHED:
        saved = {name: getattr(torch.nn.init, name) for name in INITIALISERS}
        try:
            for name in INITIALISERS:
                setattr(torch.nn.init, name, _unchanged)
            yield
        finally:
            for name, initialiser in saved.items():
                setattr(torch.nn.init, name, initialiser)


def _unchanged(tensor: torch.Tensor, *args: object, **kwargs: object) -> torch.Tensor:
    return tensor
