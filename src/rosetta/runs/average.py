"""Checkpoint averaging: the element-wise mean of the weights of a run's last
checkpoints, saved as a checkpoint that every command reads.

The weights late in training wander around a minimum; their average usually
sits nearer to it than any one of them, which is why fairseq and Marian report
averaged models.
"""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from rosetta.errors import RosettaError
from rosetta.runs import checkpoint as ckpt
from rosetta.runs.weights import check_tensors
from rosetta.runtime.atomic import atomic_folder
from rosetta.runtime.outputs import claim_folder

AVERAGE_KIND = "an averaged checkpoint"  # what the folder records it holds


def last_checkpoints(run_dir: Path, count: int | None = None) -> list[Path]:
    """The ``count`` newest checkpoints the run keeps (None: all it keeps),
    oldest first."""
    if count is not None and count < 1:
        raise RosettaError(f"--last {count}: average at least one checkpoint")
    names = ckpt.read_index(run_dir)["checkpoints"]
    if not names:
        raise RosettaError(f"{run_dir}: a run folder with checkpoints expected")
    count = len(names) if count is None else count
    if len(names) < count:
        raise RosettaError(
            f"{run_dir} keeps {len(names)} checkpoint(s), not {count}: train with "
            f"train.keep_last: {count} (or more) to average that many"
        )
    return [ckpt.inside_run(run_dir, name) for name in names[-count:]]


def average_weights(folders: list[Path]) -> dict[str, torch.Tensor]:
    """The mean of the checkpoints' weights (summed in float64), each tensor in
    its stored dtype."""
    total: dict[str, torch.Tensor] = {}
    dtypes: dict[str, torch.dtype] = {}
    first: dict[str, torch.Tensor] = {}
    for folder in folders:
        ckpt.read_meta(folder)  # checksums
        path = folder / ckpt.MODEL_FILE
        try:
            tensors = load_file(str(path))
        except (SafetensorError, OSError) as error:  # resealed over damage
            raise RosettaError(f"{path}: cannot load weights: {error}") from None
        first = first or tensors
        if tensors.keys() != first.keys():
            raise RosettaError(f"{folder}: holds other weights than {folders[0]}")
        check_tensors(tensors, first, path)  # the dtypes of the first, finite
        for name, tensor in tensors.items():
            if name in total and tensor.shape != total[name].shape:
                raise RosettaError(f"{folder}: {name} has another shape")
            dtypes[name] = tensor.dtype
            total[name] = total.get(name, 0) + tensor.double()
    return {name: (t / len(folders)).to(dtypes[name]) for name, t in total.items()}


def average_run(
    run_dir: Path, count: int | None, output: Path, overwrite: bool = False
) -> list[Path]:
    """Write the average of ``run_dir``'s last ``count`` checkpoints (None:
    all it keeps) to the checkpoint folder ``output``; returns the
    checkpoints averaged.

    ``output`` may not exist, or (with ``overwrite``) must be an earlier
    average: never the run, one of its checkpoints or a folder holding them."""
    folders = last_checkpoints(run_dir, count)
    claim_folder(
        output,
        inputs=[run_dir, *folders],
        overwrite=overwrite,
        what=AVERAGE_KIND,
    )
    meta = ckpt.read_meta(folders[-1])
    # an imported model's checkpoint has no trainer position
    kept = {k: meta[k] for k in ("config", "tokenizers", "trainer") if k in meta}
    kept["averaged"] = [str(folder) for folder in folders]
    weights = average_weights(folders)
    with atomic_folder(output, kind=AVERAGE_KIND) as folder:
        ckpt.write_checkpoint_files(folder, weights, None, kept)
    return folders
