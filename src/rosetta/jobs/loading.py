"""One way in: ``rosetta.load(path)`` gives any trained model ready to use.

A run folder (its best checkpoint) or a checkpoint folder gives its family's
inference object: a ``Translator`` (Transformer, recurrent), a
``NATTranslator`` (non-autoregressive; ``rescored_by(teacher, samples)`` for
noisy parallel decoding) or a ``LanguageModel`` (any language-model family,
such as Transformer-XL). With ``engine="ctranslate2"`` (an export format a
family names that is also an engine: ``Family.exports``) a
Transformer runs in CTranslate2 instead (a run is exported on first use; an
exported folder loads as it is). A list of paths gives an ensemble
(``rosetta.inference.ensemble``): the models translate as one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from rosetta.errors import RosettaError
from rosetta.families import ENGINES
from rosetta.inference.text_translator import TextTranslator
from rosetta.jobs.exports import load_engine
from rosetta.jobs.restore import restore
from rosetta.runtime.compiled import CompileSetting, checked_setting
from rosetta.runtime.devices import parse_device, pick_device
from rosetta.runtime.precision import check_precision
from rosetta.runtime.precisions import Precision

if TYPE_CHECKING:
    from rosetta.inference.language_model import LanguageModel


def load(
    path: str | Path | Sequence[str | Path],
    device: str | torch.device | None = None,
    which: str = "best",
    precision: Precision = "fp32",
    *,
    engine: str = "rosetta",
    packed: bool = True,
    compiled: CompileSetting = "auto",
    weights: Sequence[float] | None = None,
) -> Any:
    """The trained model at ``path``, ready to translate or score.

    Args:
        path: a run folder (its ``which`` checkpoint, ``best`` or
            ``latest``), a checkpoint folder, or (``engine="ctranslate2"``)
            a CTranslate2 export; a list of them: an ensemble of those
            translation models (``EnsembleTranslator``), which must share
            their vocabularies.
        device: ``cpu``, ``cuda`` or ``cuda:N``; default a GPU if there is one.
        precision: ``fp32``, ``bf16``, ``fp16`` or ``int8``
            (``rosetta.runtime.precision``).
        engine: ``rosetta`` (PyTorch) or ``ctranslate2``, which computes
            with as many CPU threads as PyTorch is set to.
        packed: ``False`` decodes a Transformer through its layers rather
            than its packed fast path (for comparison).
        compiled: ``True`` decodes a Transformer with a compiled step
            (``torch.compile``; on a GPU, CUDA graphs), ``False`` never,
            ``"auto"`` (default) on a GPU.
        weights: an ensemble's weights, one positive number per model
            (default equal; scaled to sum to 1).
    """
    if not isinstance(path, str | Path):
        options = dict(device=device, which=which, precision=precision)
        options.update(engine=engine, packed=packed, compiled=compiled)
        return load_ensemble(path, weights, **options)
    if weights is not None:
        raise RosettaError("weights go with a list of models (an ensemble)")
    if engine not in ENGINES:
        raise RosettaError(f"engine {engine!r}: use one of {', '.join(ENGINES)}")
    try:
        compiled = checked_setting(compiled)
    except ValueError as error:
        raise RosettaError(str(error)) from None
    if engine != "rosetta" and compiled is True:
        raise RosettaError(f"a compiled decoding step is Rosetta's, not {engine}'s")
    if engine != "rosetta":
        # its threads follow the policy's choice for PyTorch's (use_threads)
        return load_engine(engine, path, device, precision, torch.get_num_threads())
    device = parse_device(device)
    check_precision(device, precision)  # before a GPU is looked for
    restored = restore(path, pick_device(device), which)
    return restored.inference(precision, packed, compiled)


def load_ensemble(
    paths: Sequence[str | Path], weights: Sequence[float] | None, **options: Any
) -> TextTranslator:
    """The translation models at ``paths`` (each read by ``load`` with
    ``options``) as one ensemble, weighted by ``weights``."""
    from rosetta.inference.ensemble import EnsembleTranslator

    if isinstance(paths, bytes) or not isinstance(paths, Sequence) or not paths:
        raise RosettaError(f"models {paths!r}: a path, or a list of paths")
    for path in paths:
        if not isinstance(path, str | Path):
            raise RosettaError(f"model {path!r}: a path (text or Path)")
    if options.get("engine", "rosetta") != "rosetta":
        raise RosettaError("an ensemble decodes in Rosetta's engine (--engine rosetta)")
    members = [load_translator(path, **options) for path in paths]
    return EnsembleTranslator(members, weights, names=[str(p) for p in paths])


def load_translator(
    path: str | Path | Sequence[str | Path], *args: Any, **options: Any
) -> TextTranslator:
    """``load`` (the same arguments) for a translation model; a language
    model is refused."""
    loaded = load(path, *args, **options)
    if not isinstance(loaded, TextTranslator):
        raise RosettaError(
            f"{path}: a language model, not a translation model; use "
            "rosetta perplexity or rosetta generate"
        )
    return loaded


def load_language_model(
    path: str | Path, device: str | torch.device | None = None, which: str = "best"
) -> LanguageModel:
    """``load`` for a language model; a translation model is refused."""
    loaded = load(path, device, which)
    if isinstance(loaded, TextTranslator):
        raise RosettaError(
            f"{path}: a translation model, not a language model; use rosetta translate"
        )
    return loaded
