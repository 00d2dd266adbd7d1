"""``rosetta train``: from a config to a trained run folder."""

from __future__ import annotations

from pathlib import Path

import torch

from rosetta.config import Config
from rosetta.devices import pick_device
from rosetta.errors import RosettaError
from rosetta.models.build import build_language_model, build_model
from rosetta.models.nat import NonAutoregressiveTransformer
from rosetta.train import distributed
from rosetta.train.distributed import SINGLE_PROCESS, Group, local_device
from rosetta.train.lm_task import LanguageModelTask
from rosetta.train.nat_task import NATTask
from rosetta.train.prepare import prepare_data, prepare_text
from rosetta.train.trainer import Task, Trainer, TrainerState
from rosetta.train.translation_task import TranslationTask


def configure_torch(config: Config) -> None:
    if config.train.threads is not None:
        torch.set_num_threads(config.train.threads)
    if config.train.deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)
    if config.train.flush_denormals:
        # Gradients sent back through long recurrences shrink below 1.2e-38,
        # where CPU arithmetic on denormal floats is 10-100x slower; treat
        # them as zero (x86 FTZ/DAZ; a no-op elsewhere).
        torch.set_flush_denormal(True)
    torch.manual_seed(config.train.seed)


def run_training(config: Config, run_dir: Path, resume: bool = False) -> TrainerState:
    """Train ``config`` into ``run_dir``: in this process, or as one of the
    processes ``torchrun`` started (``rosetta.train.distributed``)."""
    run_dir = Path(run_dir)
    device = pick_device(config.train.device)
    group = distributed.join(device.type)
    try:
        return _train(config, run_dir, resume, local_device(device), group)
    finally:
        distributed.leave()


def _train(
    config: Config, run_dir: Path, resume: bool, device: torch.device, group: Group
) -> TrainerState:
    if group.is_main:
        if not resume and (run_dir / "checkpoints.json").exists():
            raise RosettaError(
                f"{run_dir} already holds a training run: pass --resume to "
                "continue it, or choose another output folder"
            )
        run_dir.mkdir(parents=True, exist_ok=True)
        if not resume:  # no checkpoint exists: any log here is from a run that died
            (run_dir / "metrics.jsonl").unlink(missing_ok=True)
    configure_torch(config)
    model, task = make_task(config, run_dir, device, group)
    if group.is_main:
        count = sum(p.numel() for p in model.parameters())
        processes = f", {group.world_size} processes" if group.distributed else ""
        print(f"model: {config.model.arch}, {count / 1e6:.2f}M parameters{processes}")
    if group.rank:  # same initial weights everywhere, each its own dropout
        torch.manual_seed(config.train.seed + group.rank)
    trainer = Trainer(config, run_dir, model, task, device, group)
    if resume:
        trainer.resume()
    return trainer.train()


def make_task(
    config: Config,
    run_dir: Path,
    device: torch.device,
    group: Group = SINGLE_PROCESS,
) -> tuple[torch.nn.Module, Task]:
    """The data, a freshly initialised model and the task that trains it.

    Rank 0 trains and saves the tokenizers; the other processes then load
    them."""
    quiet = lambda *_: None  # noqa: E731
    prepare = prepare_text if config.task == "lm" else prepare_data
    if group.is_main:
        data = prepare(config, run_dir)
    group.barrier()
    if not group.is_main:
        data = prepare(config, run_dir, log=quiet)
    tokenizers = data.tokenizers
    if config.task == "lm":
        model = build_language_model(config.model, len(tokenizers.tgt))
        return model, LanguageModelTask(
            config,
            model,
            tokenizers,
            data.train,
            data.valid,
            device,
            group.rank,
            group.world_size,
        )
    model = build_model(config.model, len(tokenizers.src), len(tokenizers.tgt))
    if isinstance(model, NonAutoregressiveTransformer):
        return model, NATTask(
            config,
            model,
            tokenizers,
            data.train,
            data.valid,
            data.valid_pairs,
            device,
            run_dir,
            log=print if group.is_main else quiet,
        )
    return model, TranslationTask(
        config, model, tokenizers, data.train, data.valid, data.valid_pairs, device
    )
