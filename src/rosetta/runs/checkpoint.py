"""Checkpoints: safetensors weights plus JSON metadata, written atomically.

A checkpoint is a folder ``checkpoint-0001500/`` holding ``model.safetensors``,
``optimizer.safetensors``, ``checkpoint.json`` (config, tokenizers,
optimizer hyper-parameters, trainer position, RNG states and the SHA-256 of
the tensor files) and, where training carries tensors from update to update
(a language model's memory), ``state.safetensors``. It is written under a
temporary name, every file is fsynced, and only then is it renamed into place,
so a crash never leaves a half-written checkpoint under a real name. Nothing
is ever unpickled.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from torch import nn

from rosetta.errors import RosettaError
from rosetta.runs.integrity import seal_meta, sha256_file, verify_files, verify_sealed
from rosetta.runs.schemas import ImportedRecord, IndexRecord, MetaRecord
from rosetta.runs.unfinished import refuse_missing, unfinished_swap
from rosetta.runtime.atomic import (
    as_the_user_makes,
    fsync_path,
    replace_folder,
    write_json_atomic,
)
from rosetta.runtime.outputs import RUN_LOCK
from rosetta.runtime.own_files import is_real_folder_in, remove_own_folder
from rosetta.runtime.records import parse_record, read_checked, read_record

# 2: checkpoint.json carries the checksum of its own content (``meta_sha256``).
FORMAT_VERSION = 2
MODEL_FILE, OPTIMIZER_FILE, STATE_FILE, META_FILE = (
    "model.safetensors",
    "optimizer.safetensors",
    "state.safetensors",
    "checkpoint.json",
)
TENSOR_FILES = (MODEL_FILE, OPTIMIZER_FILE, STATE_FILE)
CHECKPOINT_NAME = re.compile(r"checkpoint-[0-9]+")
INDEX_FILE = "checkpoints.json"
ENGINE_CACHE = "ctranslate2"  # a CTranslate2 engine made from the checkpoint


def record_checkpoint(
    run_dir: Path,
    name: str,
    *,
    is_best: bool,
    best_score: float | None,
    metric: str,
    keep_last: int,
) -> None:
    """Name a new checkpoint in the run's index, then drop the ones not kept.

    The last ``keep_last`` and the best are kept. The index is rewritten
    atomically before any old checkpoint is deleted, so a crash at any point
    leaves an index naming checkpoints that exist.
    """
    index = read_index(run_dir)
    names = [n for n in index["checkpoints"] if n != name] + [name]
    best = name if is_best else index.get("best")
    keep = set(names[-keep_last:]) | {best}
    write_json_atomic(
        run_dir / INDEX_FILE,
        {
            "checkpoints": [n for n in names if n in keep],
            "latest": name,
            "best": best,
            "best_score": best_score,
            "metric": metric,
        },
    )
    for old in names:
        if old not in keep:
            remove_checkpoint(run_dir / old, run_dir)


def remove_checkpoint(folder: Path, run_dir: Path) -> None:
    """Remove what a checkpoint is made of (its files, the engine cache made
    from it); a folder that holds anything else (a user's notes) is left.

    Only a real folder of the run is touched: a link (to another run's
    checkpoint, say) is left as it is, and so is all it leads to."""
    if not is_real_folder_in(folder, run_dir):
        if folder.exists() or folder.is_symlink():
            print(f"warning: {folder}: left, not a checkpoint folder of this run")
        return
    try:
        for name in (*TENSOR_FILES, META_FILE):
            (folder / name).unlink(missing_ok=True)  # a link goes, not its target
    except OSError as error:  # immutable, read-only: training goes on
        print(f"warning: {folder}: left ({error.strerror})")
        return
    remove_own_folder(folder / ENGINE_CACHE, folder)
    try:
        folder.rmdir()
    except OSError:  # not empty: somebody else's files are in it
        print(f"warning: {folder}: left, it holds files that are not Rosetta's")


def _optimizer_tensors(optimizer: torch.optim.Optimizer) -> tuple[dict, list]:
    state = optimizer.state_dict()
    tensors = {
        f"{index}.{name}": value.contiguous()
        for index, slots in state["state"].items()
        for name, value in slots.items()
        if isinstance(value, torch.Tensor)
    }
    return tensors, state["param_groups"]


def alias_key(tensor: torch.Tensor) -> tuple:
    """Equal for two names of one tensor (tied weights), whatever their names."""
    return (
        tensor.device,
        tensor.untyped_storage().data_ptr(),
        tensor.storage_offset(),
        tuple(tensor.shape),
        tensor.stride(),
        tensor.dtype,
    )


def model_tensors(model: nn.Module) -> dict[str, torch.Tensor]:
    """The state dict to write: each tied tensor once, under its first name,
    and every tensor in storage of its own.

    Tensors may share storage without being one tensor: cuDNN keeps a
    recurrent layer's weights as views of one flat buffer on a GPU. Each is
    written as a contiguous copy, so the file never depends on that layout.
    """
    tensors: dict[str, torch.Tensor] = {}
    seen: set[tuple] = set()
    for name, tensor in model.state_dict().items():
        key = alias_key(tensor)
        if key not in seen:
            seen.add(key)
            tensors[name] = tensor.detach().to("cpu", copy=True).contiguous()
    return tensors


@contextmanager
def new_checkpoint_folder(folder: Path) -> Iterator[Path]:
    """An empty temporary folder to fill with a checkpoint of a run
    (``write_checkpoint_files``), renamed into place as ``folder`` when the
    block ends: the checkpoint is written atomically (temp folder, fsync,
    rename).

    A failed write (disk full, no permission) removes its temporary folder and
    raises ``RosettaError``; earlier checkpoints are never touched.
    """
    # One name per checkpoint, not per process: the run is locked to one
    # writer, and a resumed run writing that checkpoint again clears what a
    # killed one left.
    tmp = folder.with_name(f".{folder.name}.tmp")
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        yield tmp
        replace_folder(tmp, folder)
    except OSError as error:
        shutil.rmtree(tmp, ignore_errors=True)
        reason = error.strerror or str(error)
        raise RosettaError(
            f"{folder}: checkpoint not written ({reason}); "
            "the previous checkpoints are kept"
        ) from None


def save_tensors(tensors: dict[str, torch.Tensor], path: Path) -> None:
    """``safetensors.torch.save_file``, the file then given the user's
    permissions (safetensors makes it 0600 whatever the umask)."""
    save_file(tensors, str(path))
    as_the_user_makes(path)


def write_checkpoint_files(
    folder: Path,
    model: nn.Module | dict[str, torch.Tensor],
    optimizer: torch.optim.Optimizer | None,
    meta: dict[str, Any],
    state: dict[str, torch.Tensor] | None = None,
) -> None:
    """Fill the empty ``folder`` with a checkpoint, every file fsynced.

    ``model`` is a model, or the tensors to write (``model_tensors`` of one);
    ``state`` holds the training tensors that are not weights."""
    tensors = model if isinstance(model, dict) else model_tensors(model)
    save_tensors(tensors, folder / MODEL_FILE)
    files = [MODEL_FILE]
    meta = {"format_version": FORMAT_VERSION, **meta}
    if optimizer is not None:
        tensors, groups = _optimizer_tensors(optimizer)
        save_tensors(tensors, folder / OPTIMIZER_FILE)
        files.append(OPTIMIZER_FILE)
        meta["optimizer_param_groups"] = groups
    if state:
        cpu = {k: v.detach().to("cpu").contiguous() for k, v in state.items()}
        save_tensors(cpu, folder / STATE_FILE)
        files.append(STATE_FILE)
    meta["sha256"] = {name: sha256_file(folder / name) for name in files}
    meta = seal_meta(meta)
    with open(folder / META_FILE, "w", encoding="utf-8") as handle:
        json.dump(meta, handle, indent=1)
    for name in [*files, META_FILE]:
        fsync_path(folder / name)
    fsync_path(folder)


def read_meta(folder: Path, tensors: bool = True) -> dict[str, Any]:
    """Read and check a checkpoint's metadata (sealed by its own checksum)
    and the checksums of its files (``rosetta.runs.integrity``). Only a
    caller that reads no tensor leaves ``tensors`` out: whatever loads the
    weights checks them first."""
    meta_path = folder / META_FILE
    if not meta_path.is_file():
        raise RosettaError(f"{folder}: not a Rosetta checkpoint ({META_FILE} missing)")
    meta = read_record(meta_path, dict[str, Any], "a checkpoint's metadata")
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise RosettaError(
            f"{meta_path}: checkpoint format {version!r}, this Rosetta reads "
            f"{FORMAT_VERSION}"
        )
    verify_sealed(meta, meta_path)
    if tensors:
        verify_files(meta, folder, TENSOR_FILES, required=MODEL_FILE)
    parse_record(meta, MetaRecord, str(meta_path), "a checkpoint's metadata")
    return meta


def imported_record(meta: dict[str, Any]) -> ImportedRecord | None:
    """What ``rosetta import`` recorded of a checkpoint's model (``meta``, as
    ``read_meta`` checked it), or None for a model trained here."""
    found = meta.get("imported")
    if found is None:
        return None
    return parse_record(found, ImportedRecord, META_FILE, "an import's record")


def read_index(run_dir: Path) -> dict[str, Any]:
    """The run's ``checkpoints.json``; each name in it must be a folder name
    inside the run (never a path that leads elsewhere)."""
    path = run_dir / INDEX_FILE
    if not (path.exists() or path.is_symlink()):
        return {"checkpoints": [], "best": None, "latest": None}
    index = read_checked(path, IndexRecord, "a run's index of checkpoints")
    for name in [*index["checkpoints"], index.get("best"), index.get("latest")]:
        if name is None:
            continue
        if not isinstance(name, str) or not CHECKPOINT_NAME.fullmatch(name):
            raise RosettaError(
                f"{path}: {name!r} is not a checkpoint folder of this run"
            )
    return index


def inside_run(run_dir: Path, name: str) -> Path:
    """The run's checkpoint ``name``, refused if it leads out of the run (a
    symbolic link to another run's checkpoint)."""
    folder = run_dir / name
    if folder.is_symlink() or folder.resolve().parent != run_dir.resolve():
        raise RosettaError(
            f"{folder}: a link out of the run; a run's checkpoints are its own "
            "folders (copy the checkpoint in, or name it with -m)"
        )
    return folder


def resolve_checkpoint(path: Path, which: str = "best") -> Path:
    """A checkpoint folder from a run folder (its best or latest) or itself."""
    return choose_checkpoint(path, which)[0]


def choose_checkpoint(path: Path, which: str = "best") -> tuple[Path, str]:
    """``resolve_checkpoint``, and why that checkpoint, in words."""
    refuse_missing(path)
    if (path / META_FILE).is_file():
        return path, "the checkpoint named"
    index = read_index(path)
    for name in (index.get("best"), index.get("latest"), *index["checkpoints"]):
        if name:
            inside_run(path, name)
    name = index.get(which)
    if name and (unfinished := unfinished_swap(path / name)):
        raise RosettaError(unfinished)
    if name:
        if which == "best":
            metric, score = index.get("metric") or "score", index.get("best_score")
            if isinstance(score, float):  # the loss is kept negated: higher is better
                metric += f" {-score if metric == 'loss' else score:.2f}"
            return path / name, f"the run's best by validation {metric}"
        return path / name, f"the run's {which}"
    name = index.get("latest")
    if not name and (path / RUN_LOCK).exists():  # a run: prepared or training
        raise RosettaError(
            f"{path}: a run with no checkpoint yet: a training writes its first "
            "at its first validation (train.validate_every); if it is still "
            "training, wait for that"
        )
    if not name:
        raise RosettaError(f"{path}: neither a checkpoint nor a run with checkpoints")
    return path / name, "the run's latest: it has no validation scores"
