"""Numeric precision: float32, bfloat16 matrix products, or int8 inference.

- ``fp32``: float32 everywhere (the default).
- ``bf16`` (training and inference): the forward pass runs under
  ``torch.autocast``: matrix products and the layers built on them compute in
  bfloat16 (on CPUs with AMX or AVX-512 BF16, and on recent GPUs, several times
  the float32 rate), while the weights, their gradients, the optimizer, the
  output softmax and the loss stay float32.
- ``fp16`` (training and inference): the same with float16, whose narrow
  range needs the loss scaled in training (``torch.amp.GradScaler``: the loss
  is multiplied by a large factor before ``backward`` so small gradients do
  not vanish, the gradients divided by it before the step, and a step whose
  gradients overflowed is skipped while the factor shrinks). Made for GPUs;
  torch also runs it on CPUs, slowly.
- ``int8`` (CPU inference): every ``nn.Linear`` is replaced by a dynamically
  quantized one: int8 weights (per tensor), activations quantized on the fly,
  products on int8 units (fbgemm; VNNI/AMX where present). Embeddings,
  normalisation and the recurrent cells stay float32.

bf16 and int8 change results in the last digits; docs/performance.md reports what they
cost in BLEU.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Callable

import torch
from torch import nn

from rosetta.errors import RosettaError
from rosetta.runtime.precisions import PRECISIONS

AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def _check_name(precision: str) -> None:
    if precision not in PRECISIONS:
        raise RosettaError(
            f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}"
        )


def check_precision(device: torch.device, precision: str) -> None:
    """A clear error for an unknown precision, int8 anywhere but the CPU, or a
    half precision that this device and PyTorch cannot autocast to."""
    _check_name(precision)
    if precision == "int8" and device.type != "cpu":
        raise RosettaError("int8 inference runs on the CPU; use --device cpu")
    if precision not in AUTOCAST_DTYPES:
        return
    bf16_gpu = precision == "bf16" and device.type == "cuda"
    if bf16_gpu and not torch.cuda.is_bf16_supported():
        raise RosettaError("this GPU has no bfloat16 arithmetic: use fp16 or fp32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns, then runs without it
        with torch.autocast(device.type, dtype=AUTOCAST_DTYPES[precision]):
            supported = autocast_dtype(device.type) == AUTOCAST_DTYPES[precision]
    if not supported:
        raise RosettaError(
            f"{precision}: this PyTorch cannot autocast to it on {device.type}"
        )


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """The context that applies ``precision`` to the code run inside it.

    Only bf16 and fp16 act here; an int8 model carries its precision in its
    layers.
    """
    _check_name(precision)
    if precision not in AUTOCAST_DTYPES:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=AUTOCAST_DTYPES[precision])


def autocast_active(device_type: str) -> bool:
    """Whether autocast is on for ``device_type`` ("cpu", "cuda") here."""
    try:
        return torch.is_autocast_enabled(device_type)
    except TypeError:  # torch < 2.4 has no device argument
        if device_type == "cpu":
            return torch.is_autocast_cpu_enabled()
        return torch.is_autocast_enabled()


def autocast_dtype(device_type: str) -> torch.dtype | None:
    """The dtype autocast computes in for ``device_type`` here; None when off."""
    if not autocast_active(device_type):
        return None
    try:
        return torch.get_autocast_dtype(device_type)
    except AttributeError:  # torch < 2.4
        if device_type == "cpu":
            return torch.get_autocast_cpu_dtype()
        return torch.get_autocast_gpu_dtype()


def current_autocast(
    device_type: str,
) -> Callable[[], contextlib.AbstractContextManager]:
    """Makes contexts that re-enter, in another thread, the autocast active in
    this one (autocast, like ``no_grad``, is per thread); call it here."""
    dtype = autocast_dtype(device_type)
    if dtype is None:
        return contextlib.nullcontext
    return functools.partial(torch.autocast, device_type, dtype=dtype)


def quantize_int8(model: nn.Module) -> nn.Module:
    """A copy of ``model`` for CPU inference with int8 ``nn.Linear`` layers."""
    try:
        from torch.ao.quantization import quantize_dynamic
    except ImportError:  # pragma: no cover - depends on the installed PyTorch
        raise RosettaError(
            "int8 needs torch.ao.quantization.quantize_dynamic, which this "
            f"PyTorch ({torch.__version__}) does not have"
        ) from None
    with warnings.catch_warnings():  # PyTorch announces a successor (torchao)
        warnings.simplefilter("ignore")
        return quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8, inplace=False)
