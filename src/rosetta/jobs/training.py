"""``rosetta train``: from a config to a trained run folder."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from rosetta.config.schema import Config
from rosetta.data.store import STORE_DIR
from rosetta.errors import RosettaError
from rosetta.families import FAMILIES, check_model_fits, family_of
from rosetta.runs.checkpoint import INDEX_FILE, read_index
from rosetta.runs.corpus_languages import LANGUAGES_FILE
from rosetta.runs.lock import run_lock
from rosetta.runtime.atomic import SWAP_SUFFIX, finish_swaps
from rosetta.runtime.devices import pick_device
from rosetta.runtime.outputs import refuse_kept_places, refuse_long_name
from rosetta.runtime.threads import use_threads
from rosetta.train import distributed
from rosetta.train.distributed import SINGLE_PROCESS, Group, local_device
from rosetta.train.fine_tuning import (
    load_starting_weights,
    refuse_resuming_an_import,
    starting_checkpoint,
    write_starting_tokenizers,
)
from rosetta.train.metrics import METRICS_FILE
from rosetta.train.prepare import (
    TOKENIZER_FILE,
    PreparedData,
    PrepareOptions,
    require_corpus,
)
from rosetta.train.resume import resume_training
from rosetta.train.tensorboard import TENSORBOARD_DIR
from rosetta.train.trainer import Trainer, TrainerState
from rosetta.train.training_task import TrainingSetup, TrainingTask


def configure_torch(config: Config) -> None:
    use_threads(config.train.threads)
    if config.train.deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)
        # Deterministic mode also fills every new tensor with NaN (a kernel
        # per allocation) in case a kernel reads memory it never wrote; none
        # of training's does, so the weights are the same without the fills.
        torch.utils.deterministic.fill_uninitialized_memory = False
    if config.train.flush_denormals:
        # Gradients sent back through long recurrences shrink below 1.2e-38,
        # where CPU arithmetic on denormal floats is 10-100x slower; treat
        # them as zero (x86 FTZ/DAZ; a no-op elsewhere).
        torch.set_flush_denormal(True)
    torch.manual_seed(config.train.seed)


# What a run that stopped before its first checkpoint may have left: a new
# run in that folder starts over and may replace these (and nothing else).
# what a run writes before its first checkpoint (folders end in "/"), with
# what each family's prepare writes besides
EARLY_RUN_PLACES = {
    TOKENIZER_FILE,
    LANGUAGES_FILE,
    f"{STORE_DIR}/",
    METRICS_FILE,
    f"{TENSORBOARD_DIR}/",
    *(place for family in FAMILIES for place in family.run_files),
}
EARLY_RUN_FILES = {place.rstrip("/") for place in EARLY_RUN_PLACES}
EARLY_RUN_FOLDERS = {place[:-1] for place in EARLY_RUN_PLACES if place.endswith("/")}


def check_new_run_folder(run_dir: Path) -> None:
    """``run_dir`` may receive a new run: it does not exist, is empty, or holds
    only what a run that never reached a checkpoint wrote. A finished or
    resumable run, or anybody else's files, are refused before any work."""
    refuse_long_name(run_dir)
    refuse_kept_places(run_dir)  # a run inside a run, a checkpoint, an export
    if (run_dir / INDEX_FILE).exists():
        raise RosettaError(
            f"{run_dir} already holds a training run: pass --resume to "
            "continue it, or choose another output folder"
        )
    if run_dir.exists() and not run_dir.is_dir():
        raise RosettaError(f"{run_dir} exists and is not a folder")
    if run_dir.is_dir():
        foreign = sorted(
            entry.name
            for entry in run_dir.iterdir()
            if entry.name not in EARLY_RUN_FILES and not entry.name.startswith(".")
        )
        if foreign:
            raise RosettaError(
                f"{run_dir} holds files that are not a Rosetta run "
                f"({', '.join(foreign[:3])}{', ...' if len(foreign) > 3 else ''}); "
                "choose a new or empty folder"
            )
        for name in EARLY_RUN_FILES:
            path = run_dir / name
            folder = name in EARLY_RUN_FOLDERS
            if (path.exists() or path.is_symlink()) and (
                path.is_symlink() or path.is_dir() != folder
            ):
                kind = "a folder" if folder else "a file"
                raise RosettaError(f"{path}: a run's {name} must be {kind}; move it")


def check_start(config: Config) -> None:
    """A ``train.init`` that names no run, checkpoint or import is refused
    before any folder is made."""
    starting_checkpoint(config)


def prepare_run(config: Config, run_dir: Path, workers: int | None = None) -> None:
    """``rosetta prepare``: the tokenizers trained (or a starting run's
    copied) and the corpora encoded into the new run folder ``run_dir``, on
    ``workers`` threads (default: every core)."""
    check_new_run_folder(run_dir)
    options = PrepareOptions(workers=workers, refresh=True)
    require_corpus(config)
    start = starting_checkpoint(config)
    with run_lock(run_dir):
        check_new_run_folder(run_dir)
        if start is not None:
            write_starting_tokenizers(config, run_dir, *start)
        family_of(config.model).prepare(config, run_dir, print, options)


def _flushes_denormals() -> bool:
    return float(torch.tensor([1e-40]) * 1.0) == 0.0


@contextmanager
def process_settings_kept() -> Iterator[None]:
    """Training sets process-wide torch switches (threads, deterministic
    kernels and their filling of new memory, denormals flushed to zero); a
    caller gets its own back."""
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    filling = torch.utils.deterministic.fill_uninitialized_memory
    flushing = _flushes_denormals()
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
        torch.utils.deterministic.fill_uninitialized_memory = filling
        torch.set_flush_denormal(flushing)


def run_training(config: Config, run_dir: Path, resume: bool = False) -> TrainerState:
    """Train ``config`` into ``run_dir``: in this process, or as one of the
    processes ``torchrun`` started (``rosetta.train.distributed``)."""
    run_dir = Path(run_dir)
    device = pick_device(config.train.device)
    group = distributed.join(device.type)
    with process_settings_kept():
        return _run_in_group(config, run_dir, resume, device, group)


def _run_in_group(
    config: Config, run_dir: Path, resume: bool, device: torch.device, group: Group
) -> TrainerState:
    try:
        state = _train(config, run_dir, resume, local_device(device), group)
        group.barrier()  # every process done before any leaves
        return state
    finally:
        distributed.leave()


def _train(
    config: Config, run_dir: Path, resume: bool, device: torch.device, group: Group
) -> TrainerState:
    if not group.is_main:
        return _train_locked(config, run_dir, resume, device, group)
    check_run_folder(run_dir, resume)  # before the lock file is made in it
    with run_lock(run_dir):
        return _train_locked(config, run_dir, resume, device, group)


def check_run_folder(run_dir: Path, resume: bool) -> None:
    """``run_dir`` may be trained into: a new run, or with ``resume`` one
    that has checkpoints (or stopped before its first). A checkpoint swap
    a kill left midway is completed under the run's lock, before the run's
    checkpoints are read (``finish_pending_swaps``)."""
    refuse_long_name(run_dir)
    if not (resume and (run_dir / INDEX_FILE).is_file()):
        check_new_run_folder(run_dir)
    elif not any(run_dir.glob(f".*{SWAP_SUFFIX}")):
        refuse_resuming_an_import(run_dir)


def finish_pending_swaps(run_dir: Path) -> None:
    """Complete the checkpoint swaps a killed run left (under its lock)."""
    for done in finish_swaps(run_dir):
        print(done)


def _train_locked(
    config: Config, run_dir: Path, resume: bool, device: torch.device, group: Group
) -> TrainerState:
    start = starting_checkpoint(config)
    if group.is_main:
        if resume:
            finish_pending_swaps(run_dir)
        check_run_folder(run_dir, resume)  # again: another may have just ended
        trained = resume and read_index(run_dir).get("latest")
        if trained and not (run_dir / TOKENIZER_FILE).is_file():
            raise RosettaError(
                f"{run_dir}: --resume needs the run's {TOKENIZER_FILE}, which is "
                "missing; tokenizers trained again could number the pieces "
                "otherwise than the checkpoints do"
            )
        run_dir.mkdir(parents=True, exist_ok=True)
        if not resume:  # no checkpoint exists: any log here is from a run that died
            (run_dir / METRICS_FILE).unlink(missing_ok=True)
            shutil.rmtree(run_dir / TENSORBOARD_DIR, ignore_errors=True)
        if not trained and start is not None:
            write_starting_tokenizers(config, run_dir, *start)
    configure_torch(config)
    model, task = make_task(config, run_dir, device, group)
    if start is not None and not (resume and read_index(run_dir).get("latest")):
        log = print if group.is_main else lambda *_: None
        upgrade = family_of(config.model).upgrade_weights
        load_starting_weights(model, start[0], device, upgrade, log)
    if group.is_main:
        count = sum(p.numel() for p in model.parameters())
        processes = f", {group.world_size} processes" if group.distributed else ""
        print(f"model: {config.model.arch}, {count / 1e6:.2f}M parameters{processes}")
    if group.rank:  # same initial weights everywhere, each its own dropout
        torch.manual_seed(config.train.seed + group.rank)
    compiles = family_of(config.model).compiles
    trainer = Trainer(config, run_dir, model, task, device, group, compiles)
    if resume:
        resume_training(trainer, family_of(config.model).upgrade_weights)
    return trainer.train()


def check_fits(config: Config, data: Any) -> None:
    """Before the model is built: its weights, gradients and Adam's moments
    fit in memory, and its positions hold every pair it will meet (training
    and validation; found at the config, not at the first step)."""
    sizes = len(data.tokenizers.src), len(data.tokenizers.tgt)
    check_model_fits(config.model, *sizes, data.tokenizers, copies=4)
    limit = config.model.position_limit
    if limit is None or not isinstance(data, PreparedData):
        return
    for split, pairs in (("train", data.train), ("valid", data.valid)):
        if not len(pairs):
            continue
        # stored without <eos>, which the model reads (or predicts) too
        longest = 1 + int(max(pairs.src_lengths.max(), pairs.tgt_lengths.max()))
        if longest > limit:
            raise RosettaError(
                f"data.{split} holds a sequence of {longest} tokens; the model's "
                f"positions hold {limit} (model.max_positions): raise it, or "
                f"lower data.max_len to {limit}"
            )


def make_task(
    config: Config,
    run_dir: Path,
    device: torch.device,
    group: Group = SINGLE_PROCESS,
) -> tuple[torch.nn.Module, TrainingTask]:
    """The data, a freshly initialised model and the task that trains it.

    Rank 0 trains and saves the tokenizers; the other processes then load
    them."""
    quiet = lambda *_: None  # noqa: E731
    family = family_of(config.model)
    require_corpus(config)
    if group.is_main:
        data = family.prepare(config, run_dir, print)
    group.barrier()
    if not group.is_main:
        data = family.prepare(config, run_dir, quiet)
    tokenizers = data.tokenizers
    check_fits(config, data)
    model = family.build(
        config.model, len(tokenizers.src), len(tokenizers.tgt), tokenizers
    )
    log = print if group.is_main else quiet
    setup = TrainingSetup(
        config, model, data, device, run_dir, group.rank, group.world_size, log
    )
    return model, family.training_task(setup)
