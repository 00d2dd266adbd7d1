"""``rosetta train``: from a config to a trained run folder."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from rosetta.config import Config
from rosetta.errors import RosettaError
from rosetta.models.build import build_model
from rosetta.train.prepare import prepare_data
from rosetta.train.trainer import Trainer, TrainerState


def pick_device(name: str) -> torch.device:
    if name == "cuda" and not torch.cuda.is_available():
        raise RosettaError("device 'cuda' asked for, but no CUDA GPU is available")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def distributed_rank() -> tuple[int, int]:
    """(rank, world size) of an initialised process group, (0, 1) otherwise.

    The trainer shards batches by rank and only rank 0 logs and saves, but the
    model is not wrapped in DistributedDataParallel yet, so several processes
    without a process group are refused rather than trained unsynchronised.
    """
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise RosettaError(
            "multi-process training (torchrun) is not supported by this version; "
            "run one process"
        )
    return 0, 1


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
    run_dir = Path(run_dir)
    if not resume and (run_dir / "checkpoints.json").exists():
        raise RosettaError(
            f"{run_dir} already holds a training run: pass --resume to continue "
            "it, or choose another output folder"
        )
    run_dir.mkdir(parents=True, exist_ok=True)
    if not resume:  # no checkpoint exists: any log here is from a run that died
        (run_dir / "metrics.jsonl").unlink(missing_ok=True)
    configure_torch(config)
    rank, world_size = distributed_rank()
    data = prepare_data(config, run_dir, log=print if rank == 0 else lambda *_: None)
    model = build_model(
        config.model, len(data.tokenizers.src), len(data.tokenizers.tgt)
    )
    if rank == 0:
        count = sum(p.numel() for p in model.parameters())
        print(f"model: {config.model.arch}, {count / 1e6:.2f}M parameters")
    trainer = Trainer(
        config,
        run_dir,
        model,
        data.tokenizers,
        data.train,
        data.valid,
        data.valid_pairs,
        pick_device(config.train.device),
        rank,
        world_size,
    )
    if resume:
        trainer.resume()
    return trainer.train()
