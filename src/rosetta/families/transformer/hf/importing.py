"""``rosetta import hf MODEL -o RUN``: a Hugging Face transformers model (a
local folder or a Hub name) as an ordinary Rosetta run, by its
``config.json``'s ``model_type``: ``marian`` (MarianMT, the OPUS-MT models;
``rosetta.families.transformer.hf.marian``), ``m2m_100`` (M2M100 and NLLB-200)
and ``mbart`` (mBART-50; ``rosetta.families.transformer.hf.multilingual``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rosetta.errors import RosettaError
from rosetta.families.transformer.hf.folder import fetch_from_hub
from rosetta.families.transformer.hf.marian.importer import import_marian
from rosetta.families.transformer.hf.multilingual.importer import import_multilingual
from rosetta.families.transformer.hf.multilingual.settings import MODEL_TYPES
from rosetta.families.transformer.hf.settings import CONFIG_FILE, read_object

READ = "marian (MarianMT, OPUS-MT), m2m_100 (M2M100, NLLB-200) and mbart (mBART-50)"


def hf_source(source: str) -> Path:
    """A local folder as it is; anything else, a Hub repository name."""
    local = Path(source)
    if local.is_dir():
        return local
    if local.exists() or source.count("/") != 1 or source.startswith((".", "/")):
        raise RosettaError(
            f"{source}: neither a model folder nor a Hub name (owner/model)"
        )
    return fetch_from_hub(source)


def import_hf(source: str, folder: Path, log: Callable[[str], None]) -> None:
    """Fill the empty ``folder`` with the run of the model ``source``; a
    model of another ``model_type`` is refused before its weights are read."""
    path = hf_source(source)
    log(f"import: reading {path}")
    if not path.is_dir():
        raise RosettaError(f"{path}: no such folder")
    config = read_object(path / CONFIG_FILE)
    kind = config.get("model_type")
    if kind == "marian":
        import_marian(path, source, folder)
    elif kind in MODEL_TYPES:
        import_multilingual(path, config, source, folder, log)
    else:
        raise RosettaError(
            f"{path / CONFIG_FILE}: model_type {kind!r}; rosetta import hf reads {READ}"
        )
