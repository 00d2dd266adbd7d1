"""A Hugging Face MarianMT folder read safely: its configuration, its
generation settings, its tokenizer files and its weights.

Weights come from ``model.safetensors`` (read directly) or, where a
repository has only ``pytorch_model.bin`` (a pickle), through
``torch.load(weights_only=True)``, which builds tensors and plain containers
and refuses a pickle that asks for anything else (code to run). Every
problem is one line that names the file.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from rosetta.errors import RosettaError

CONFIG_FILE = "config.json"
GENERATION_FILE = "generation_config.json"
SAFETENSORS_FILE = "model.safetensors"
PICKLE_FILE = "pytorch_model.bin"
SOURCE_SPM, TARGET_SPM = "source.spm", "target.spm"
VOCAB_FILE, TARGET_VOCAB_FILE = "vocab.json", "target_vocab.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
# what a download fetches: everything above, nothing else (no other formats)
HUB_FILES = [
    CONFIG_FILE,
    GENERATION_FILE,
    SAFETENSORS_FILE,
    SOURCE_SPM,
    TARGET_SPM,
    VOCAB_FILE,
    TARGET_VOCAB_FILE,
    TOKENIZER_CONFIG,
]


@dataclass(frozen=True)
class MarianFolder:
    """What a MarianMT folder holds, read and checked for form (the
    conversion checks that the parts fit together)."""

    folder: Path
    config: dict[str, Any]
    generation: dict[str, Any]
    tokenizer_config: dict[str, Any]
    source_spm: bytes
    target_spm: bytes
    vocab: dict[str, int]
    target_vocab: dict[str, int] | None  # separate vocabularies only
    tensors: dict[str, torch.Tensor]


def read_json(path: Path, required: bool = True) -> dict[str, Any]:
    if not path.is_file():
        if required:
            raise RosettaError(f"{path}: missing; a MarianMT folder holds it")
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RosettaError(f"{path}: not readable JSON ({error})") from None
    if not isinstance(value, dict):
        raise RosettaError(f"{path}: a JSON object expected")
    return value


def read_vocab(path: Path) -> dict[str, int]:
    vocab = read_json(path)
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in vocab.values()):
        raise RosettaError(f"{path}: a table of pieces to whole-number ids expected")
    return vocab


def read_bytes(path: Path) -> bytes:
    if not path.is_file():
        raise RosettaError(f"{path}: missing; a MarianMT folder holds it")
    return path.read_bytes()


def read_tensors(folder: Path) -> dict[str, torch.Tensor]:
    """The weights: safetensors if present, else the pickle, read with
    ``weights_only=True``."""
    safetensors = folder / SAFETENSORS_FILE
    if safetensors.is_file():
        try:
            return load_file(str(safetensors))
        except (SafetensorError, OSError, RuntimeError) as error:
            reason = " ".join(str(error).split())
            raise RosettaError(
                f"{safetensors}: cannot read weights: {reason}"
            ) from None
    pickled = folder / PICKLE_FILE
    if not pickled.is_file():
        raise RosettaError(
            f"{folder}: no weights ({SAFETENSORS_FILE} or {PICKLE_FILE})"
        )
    try:
        loaded = torch.load(pickled, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        reason = str(error).split("\n")[0].strip()
        raise RosettaError(
            f"{pickled}: refused: the pickle asks for more than tensors "
            f"(read with weights_only=True: {reason})"
        ) from None
    except (EOFError, RuntimeError, OSError, ValueError) as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        raise RosettaError(f"{pickled}: cannot read weights: {reason}") from None
    if not isinstance(loaded, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in loaded.items()
    ):
        raise RosettaError(f"{pickled}: not a table of named tensors")
    return loaded


def read_marian_folder(folder: Path) -> MarianFolder:
    """The parts of the MarianMT folder ``folder``; a model of another kind
    (``model_type`` not marian) is refused before its weights are read."""
    if not folder.is_dir():
        raise RosettaError(f"{folder}: no such folder")
    config = read_json(folder / CONFIG_FILE)
    kind = config.get("model_type")
    if kind != "marian":
        raise RosettaError(
            f"{folder / CONFIG_FILE}: model_type {kind!r}; rosetta import hf "
            "reads MarianMT models (model_type marian) only"
        )
    separate = bool(config.get("separate_vocabs")) or not config.get(
        "share_encoder_decoder_embeddings", True
    )
    tokenizer_config = read_json(folder / TOKENIZER_CONFIG, required=False)
    separate = separate or bool(tokenizer_config.get("separate_vocabs"))
    return MarianFolder(
        folder=folder,
        config=config,
        generation=read_json(folder / GENERATION_FILE, required=False),
        tokenizer_config=tokenizer_config,
        source_spm=read_bytes(folder / SOURCE_SPM),
        target_spm=read_bytes(folder / TARGET_SPM),
        vocab=read_vocab(folder / VOCAB_FILE),
        target_vocab=read_vocab(folder / TARGET_VOCAB_FILE) if separate else None,
        tensors=read_tensors(folder),
    )


def fetch_from_hub(name: str) -> Path:
    """A Hub repository's MarianMT files, downloaded into (or found in) the
    Hugging Face cache: the folder that holds them."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise RosettaError(
            f"{name}: not a local folder; to download it from the Hugging Face "
            "Hub: pip install 'rosetta[hub]'"
        ) from None
    try:
        path = snapshot_download(name, allow_patterns=HUB_FILES)
    except Exception as error:  # network, authentication, no such repository
        reason = " ".join(str(error).split())
        raise RosettaError(f"{name}: cannot download from the Hub: {reason}") from None
    folder = Path(path)
    if not (folder / SAFETENSORS_FILE).is_file():  # older repositories: a pickle
        try:  # the same snapshot: into the same folder
            snapshot_download(name, allow_patterns=[PICKLE_FILE])
        except Exception as error:
            reason = " ".join(str(error).split())
            raise RosettaError(f"{name}: cannot download: {reason}") from None
    return folder
