"""The training update compiled by ``torch.compile``, or eager where it cannot be.

Eager PyTorch issues every operator from Python: on a GPU, a small or
medium model's update waits on the host, not on the chip. Compiled, the
forward pass, the loss and (through AOTAutograd) the backward pass are one
graph whose element-wise work is fused into a few generated kernels; clipping
and Adam are a second and third. Eager stays the reference: the compiled
update is tested equal to it, and a run moves between the two through the
same checkpoints.

What the compiled graph needs from the code it traces:
- no shape the data decides: the loss projects padding too and masks it
  (``rosetta.train.dense_loss``), dropout is ``torch.nn.functional.dropout``
  (``rosetta.nn.dropout``);
- dynamic shapes: a batch of another length reuses the graph;
- the learning rate as a tensor, so a new rate is not a new graph.

A compile that cannot happen (no C++ compiler for the CPU, no Triton for a
GPU, a PyTorch too old, an operator the compiler cannot trace, more
recompiles than ``torch._dynamo.config.recompile_limit``) is one warning
line, then that part runs eagerly.

Compiled code is cached on disk (``cache_folder``), so a resumed run, or the
next run of the same model, does not compile cold.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, Literal, ParamSpec, TypeVar

import torch

# torch.compile with the options Rosetta relies on (dynamic shapes, the
# compiled optimizer with a tensor learning rate, fail_on_recompile_limit_hit)
OLDEST_TORCH = (2, 6)


def torch_version() -> tuple[int, int]:
    major, minor = torch.__version__.split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


CompileSetting = bool | Literal["auto"]


def checked_setting(setting: object, name: str = "compiled") -> CompileSetting:
    """``setting`` if it is true, false or ``"auto"``; else a clear error
    (a string such as "false" is not a boolean)."""
    if setting is True or setting is False or setting == "auto":
        return setting
    raise ValueError(f"{name} must be True, False or 'auto', got {setting!r}")


def compile_wanted(
    setting: bool | str, device: torch.device, family_compiles: bool = True
) -> bool:
    """``train.compile``: true, false, or auto: on a GPU, for a family whose
    update compiles as one graph (``Family.compiles``). Not on a CPU, where
    the matrix products, not the host, bound an update, and compiling costs
    minutes."""
    if setting == "auto":
        return device.type == "cuda" and family_compiles
    return bool(setting)


def cannot_compile(device: torch.device) -> str | None:
    """Why ``torch.compile`` cannot build kernels for ``device`` here, or None."""
    if torch_version() < OLDEST_TORCH:
        wanted = ".".join(map(str, OLDEST_TORCH))
        return f"PyTorch {torch.__version__} is older than {wanted}"
    import torch._dynamo as dynamo

    if not dynamo.is_dynamo_supported():
        return "torch.compile does not run on this Python"
    if device.type == "cpu":
        compiler = os.environ.get("CXX", "g++")
        if shutil.which(compiler) is None and shutil.which("clang++") is None:
            return f"no C++ compiler ({compiler}) on the PATH"
    if device.type == "cuda":
        from torch.utils._triton import has_triton

        if not has_triton():
            return "Triton, which compiles GPU kernels, is not installed"
    return None


def cache_folder() -> Path:
    """Where compiled kernels are kept between runs: ``TORCHINDUCTOR_CACHE_DIR``
    if set, else ``$XDG_CACHE_HOME/rosetta/torch-compile`` (by default
    ``~/.cache/rosetta/torch-compile``), rather than PyTorch's default in
    /tmp, which a reboot empties."""
    chosen = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if chosen and chosen != torch_default_cache():  # torch sets its own there
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rosetta" / "torch-compile"


def torch_default_cache() -> str | None:
    """The folder PyTorch writes into ``TORCHINDUCTOR_CACHE_DIR`` itself once
    it compiles (/tmp/torchinductor_USER), or None where it says none."""
    try:
        from torch._inductor.runtime.cache_dir_utils import default_cache_dir
    except ImportError:
        return None
    return default_cache_dir()


def use_cache_folder() -> Path:
    """Point the compiler at ``cache_folder`` (read when it first compiles)."""
    folder = cache_folder()
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder)
    return folder


def graphs_compiled() -> int:
    """Graphs compiled in this process so far (new shapes and recompiles
    count): a part of training that raised it spent time compiling."""
    try:
        from torch._dynamo.utils import counters
    except ImportError:
        return 0
    return int(counters["stats"]["unique_graphs"])


P = ParamSpec("P")
R = TypeVar("R")


class CompiledOrEager(Generic[P, R]):
    """``function`` compiled with ``options``; at the first compile that
    fails, one line to ``warn``, ``fallback()`` (what the eager function
    needs set back), and from then on ``function`` itself.

    A failed compile raises before the graph runs, so the eager call that
    follows starts from the same state.
    """

    def __init__(
        self,
        function: Callable[P, R],
        name: str,
        warn: Callable[[str], None],
        fallback: Callable[[], None] | None = None,
        **options: Any,
    ):
        self.function, self.name, self.warn = function, name, warn
        self.fallback = fallback
        self.compiled: Callable[P, R] | None = torch.compile(function, **options)

    @property
    def eager(self) -> bool:
        return self.compiled is None

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        if self.compiled is None:
            return self.function(*args, **kwargs)
        from torch._dynamo.exc import FailOnRecompileLimitHit, TorchDynamoException

        try:
            return self.compiled(*args, **kwargs)
        except (TorchDynamoException, FailOnRecompileLimitHit) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else ""
            reason = f"{type(error).__name__}: {first}"[:300]
            self.warn(f"warning: {self.name} not compiled ({reason}); it runs eagerly")
            self.compiled = None
            if self.fallback is not None:
                self.fallback()
            return self.function(*args, **kwargs)


def configure_compiler() -> None:
    """Compiler settings of a training process: the cache kept, and more
    recompiles than the limit an error (then eager, said) rather than a
    silent fall back to the Python code."""
    use_cache_folder()
    import torch._dynamo as dynamo

    dynamo.config.fail_on_recompile_limit_hit = True
    # a source and target of equal length at the first batch must not make
    # "equal lengths" a condition of the graph (a recompile at the next)
    import torch.fx.experimental._config as shapes

    shapes.use_duck_shape = False
