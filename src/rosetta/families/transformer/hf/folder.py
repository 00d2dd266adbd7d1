"""A Hugging Face MarianMT folder read safely: its configuration, its
generation settings, its tokenizer files and its weights (``read_tensors``
and ``fetch_from_hub`` serve NLLB-200, M2M100 and mBART-50 folders too).

Weights come from ``model.safetensors`` (read directly) or, where a
repository has only ``pytorch_model.bin`` (a pickle), through
``torch.load(weights_only=True)``, which builds tensors and plain containers
and refuses a pickle that asks for anything else (code to run). The JSON
files are checked by type and range (``settings``), the weights by dtype
and value: a weight of a type MarianMT does not compute in (an integer, a
flag) is refused, not cast. Every problem is one line that names the file.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from rosetta.errors import RosettaError, in_words
from rosetta.families.transformer.hf.settings import (
    CONFIG_FILE,
    GENERATION_FILE,
    HUB_FILES,
    PICKLE_FILE,
    SAFETENSORS_FILE,
    SOURCE_SPM,
    TARGET_SPM,
    TARGET_VOCAB_FILE,
    TOKENIZER_CONFIG,
    VOCAB_FILE,
    GenerationSettings,
    MarianSettings,
    TokenizerSettings,
    check_generation,
    check_ids,
    folder_layout,
    missing_file,
    read_object,
)
from rosetta.runs.weights import all_finite
from rosetta.runtime.records import parse_record

# the dtypes MarianMT's weights come in; an integer or a flag is no weight
FLOATING = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


@dataclass(frozen=True)
class MarianFolder:
    """What a MarianMT folder holds, read and checked for form (the
    conversion checks that the parts fit together)."""

    folder: Path
    settings: MarianSettings  # config.json
    generation: GenerationSettings
    tokenizer: TokenizerSettings
    source_spm: bytes
    target_spm: bytes
    vocab: dict[str, int]
    target_vocab: dict[str, int] | None  # separate vocabularies only
    weights: Path  # the file the tensors come from
    tensors: dict[str, torch.Tensor]


def read_vocab(path: Path) -> dict[str, int]:
    vocab = read_object(path)
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in vocab.values()):
        raise RosettaError(f"{path}: a table of pieces to whole-number ids expected")
    return vocab


def read_bytes(path: Path) -> bytes:
    if not path.is_file():
        raise missing_file(path)
    return path.read_bytes()


def read_tensors(folder: Path) -> tuple[Path, dict[str, torch.Tensor]]:
    """The weights and the file they come from: safetensors if present, else
    the pickle, read with ``weights_only=True``."""
    safetensors = folder / SAFETENSORS_FILE
    if safetensors.is_file():
        try:
            tensors = load_file(str(safetensors), backend="pread")  # no mapping
        except (SafetensorError, OSError, RuntimeError) as error:
            reason = in_words(error)
            raise RosettaError(
                f"{safetensors}: cannot read weights: {reason}"
            ) from None
        return safetensors, checked_weights(tensors, safetensors)
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
        reason = in_words(error) or type(error).__name__
        raise RosettaError(f"{pickled}: cannot read weights: {reason}") from None
    if not isinstance(loaded, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in loaded.items()
    ):
        raise RosettaError(f"{pickled}: not a table of named tensors")
    return pickled, checked_weights(loaded, pickled)


def checked_weights(
    tensors: dict[str, torch.Tensor], path: Path
) -> dict[str, torch.Tensor]:
    """``tensors`` once each is a dense floating-point array of finite
    values: a cast would turn an int32 or bool tensor into weights that
    translate into empty lines."""
    for name, tensor in tensors.items():
        if tensor.dtype not in FLOATING or tensor.layout != torch.strided:
            kind = str(tensor.dtype).removeprefix("torch.")
            if tensor.layout != torch.strided:
                kind = str(tensor.layout).removeprefix("torch.")
            raise RosettaError(
                f"{path}: {name} is {kind}; the weights of "
                f"{folder_layout(path.parent)} are dense float32, float16, "
                "bfloat16 or float64 tensors"
            )
    for name, tensor in tensors.items():
        if not bool(all_finite(tensor)):
            raise RosettaError(f"{path}: {name} holds NaN or infinite values")
    return tensors


def read_marian_folder(folder: Path) -> MarianFolder:
    """The parts of the MarianMT folder ``folder``; a model of another kind
    (``model_type`` not marian) or a configuration of the wrong types or
    ranges is refused before its weights are read."""
    if not folder.is_dir():
        raise RosettaError(f"{folder}: no such folder")
    path = folder / CONFIG_FILE
    config = read_object(path)
    kind = config.get("model_type")
    if kind != "marian":
        raise RosettaError(
            f"{path}: model_type {kind!r}, not a MarianMT model (marian)"
        )
    settings = parse_record(config, MarianSettings, str(path), "a MarianMT config")
    check_ids(settings, path)
    generation = parse_record(
        read_object(folder / GENERATION_FILE, required=False),
        GenerationSettings,
        str(folder / GENERATION_FILE),
        "MarianMT's generation settings",
    )
    check_generation(generation, settings, folder / GENERATION_FILE)
    tokenizer = parse_record(
        read_object(folder / TOKENIZER_CONFIG, required=False),
        TokenizerSettings,
        str(folder / TOKENIZER_CONFIG),
        "a MarianMT tokenizer config",
    )
    separate = (
        settings.separate_vocabs
        or tokenizer.separate_vocabs
        or not settings.share_encoder_decoder_embeddings
    )
    source_spm, target_spm = (read_bytes(folder / n) for n in (SOURCE_SPM, TARGET_SPM))
    vocab = read_vocab(folder / VOCAB_FILE)
    target_vocab = read_vocab(folder / TARGET_VOCAB_FILE) if separate else None
    weights, tensors = read_tensors(folder)  # the large part, read last
    return MarianFolder(
        folder,
        settings,
        generation,
        tokenizer,
        source_spm,
        target_spm,
        vocab,
        target_vocab,
        weights,
        tensors,
    )


def cannot_download(name: str, reason: str) -> str:
    """What to do where the Hub cannot be reached: the download, exactly, on
    a machine that can reach it, then the import of the folder."""
    local = name.rstrip("/").split("/")[-1]
    download = (
        f'python -c "from huggingface_hub import snapshot_download; '
        f"snapshot_download('{name}', local_dir='{local}')\""
    )
    return (
        f"{name}: cannot download from the Hub ({reason}); on a machine with "
        f"a network run {download}, bring the folder {local} here, then: "
        f"rosetta import hf {local} -o RUN (a gated model also needs HF_TOKEN)"
    )


def fetch_from_hub(name: str) -> Path:
    """A Hub repository's model files (``HUB_FILES``), downloaded into (or
    found in) the Hugging Face cache: the folder that holds them."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise RosettaError(
            f"{name}: not a local folder; to download it from the Hugging Face "
            "Hub: pip install 'rosetta-nmt[hub]'"
        ) from None
    try:
        path = snapshot_download(name, allow_patterns=HUB_FILES)
    except Exception as error:  # network, authentication, no such repository
        raise RosettaError(cannot_download(name, in_words(error))) from None
    folder = Path(path)
    if not (folder / SAFETENSORS_FILE).is_file():  # older repositories: a pickle
        try:  # the same snapshot: into the same folder
            snapshot_download(name, allow_patterns=[PICKLE_FILE])
        except Exception as error:
            reason = in_words(error)
            raise RosettaError(f"{name}: cannot download: {reason}") from None
    return folder
