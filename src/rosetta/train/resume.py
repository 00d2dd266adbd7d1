"""``rosetta train --resume``: the trainer back at its latest checkpoint, under
the configuration that checkpoint was trained with.

The checkpoint keeps the whole resolved configuration. A resumed run is
compared with it key by key: a changed model, data, tokenizer or
optimisation setting would make the run neither the old one nor a new one,
so it is refused with the keys listed; a changed budget (updates, epochs,
minutes, how often to validate or log, what to keep) is what resuming is
for, and is accepted with a notice.
"""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rosetta.config.reading import config_from_dict, config_to_dict
from rosetta.errors import RosettaError
from rosetta.runs import checkpoint as ckpt
from rosetta.runs import weights
from rosetta.runs.rng import set_rng_state
from rosetta.runtime.records import parse_record
from rosetta.train.trainer import Trainer, TrainerState

if TYPE_CHECKING:
    from rosetta.config.schema import Config

# Keys a resumed run may change: how long and how it reports, not what it
# learns. Everything else must be as the checkpoint was trained.
BUDGET_KEYS = ("train.max_epochs", "train.max_steps", "train.max_minutes")
REPORTING_KEYS = (
    "train.validate_every",
    "train.valid_bleu",
    "train.valid_exact",
    "train.early_stopping",
    "train.keep_last",
    "train.log_every",
    "train.tensorboard",
    "train.threads",
    "train.device",
    "train.compile",
    "decode",
)


def flatten(section: Any, prefix: str = "") -> dict[str, Any]:
    """``{"train": {"lr": 1}}`` as ``{"train.lr": 1}``."""
    if not isinstance(section, dict):
        return {prefix: section}
    flat: dict[str, Any] = {}
    for key, value in section.items():
        flat |= flatten(value, f"{prefix}.{key}" if prefix else str(key))
    return flat


def config_changes(saved: dict, current: dict) -> tuple[list[str], list[str]]:
    """The keys that differ, as ``key: old -> new``: (refused, accepted)."""
    old, new = flatten(saved), flatten(current)
    refused, accepted = [], []
    for key in sorted(old.keys() | new.keys()):
        if old.get(key) == new.get(key):
            continue
        change = f"{key}: {old.get(key)!r} -> {new.get(key)!r}"
        free = any(
            key == allowed or key.startswith(allowed + ".")
            for allowed in (*BUDGET_KEYS, *REPORTING_KEYS)
        )
        (accepted if free else refused).append(change)
    return refused, accepted


def check_resumed_config(meta: dict, current: Config, where: str) -> list[str]:
    """Refuse a resume whose configuration changed what the run learns;
    returns the accepted changes. The saved configuration is read as the
    current one is, so a key added to Rosetta after the run was written
    counts as its default, not as a change."""
    sections = type(current).MODEL_SECTIONS or (type(current.model),)
    saved = meta["config"]
    with suppress(RosettaError):  # one that no longer reads is compared as it is
        saved = config_to_dict(config_from_dict(saved, sections, where, stored=True))
    refused, accepted = config_changes(saved, config_to_dict(current))
    if refused:
        raise RosettaError(
            f"{where} was trained with another configuration ("
            + "; ".join(refused)
            + "): resume with the config and --set values it was trained with, "
            "or train a new run"
        )
    return accepted


def training_ranks(meta: dict, folder: Path, world_size: int) -> list[Any]:
    """The checkpoint's random state of each training process, which must be
    ``world_size`` of them."""
    ranks = meta.get("rng_ranks") or [meta.get("rng")]
    if None in ranks:  # an averaged or damaged checkpoint: no training's state
        raise RosettaError(
            f"{folder / ckpt.META_FILE}: no random state of training (rng); "
            "not a checkpoint to resume from"
        )
    if len(ranks) != world_size:
        raise RosettaError(
            f"{folder}: written by {len(ranks)} training process(es); resume "
            f"it with as many, not {world_size}"
        )
    return ranks


def resume_training(trainer: Trainer, upgrade: weights.Upgrade | None) -> None:
    """Put ``trainer`` where its run's latest checkpoint left off: weights
    (their names as ``upgrade``, the family's, gives them), optimizer,
    position in the data, random states, the task's tensors. A swap a kill
    left midway was completed before
    (``rosetta.jobs.training.finish_pending_swaps``)."""
    index = ckpt.read_index(trainer.run_dir)
    if not index.get("latest"):  # stopped before its first checkpoint
        trainer.log(
            f"{trainer.run_dir}: no checkpoint yet; starting from the beginning"
        )
        trainer.forget_metrics_after_state()
        return
    folder = ckpt.inside_run(trainer.run_dir, index["latest"])
    meta = ckpt.read_meta(folder)
    accepted = check_resumed_config(meta, trainer.config, str(folder))
    if accepted:
        trainer.log("resuming with changed settings: " + "; ".join(accepted))
    group = trainer.group
    ranks = training_ranks(meta, folder, group.world_size)
    weights.load_weights(folder, trainer.model, trainer.device, upgrade)
    weights.load_optimizer(folder, trainer.optimizer, meta)
    trainer.updater.settle_optimizer()  # how this process runs it, not the run's
    trainer.state = parse_record(
        meta.get("trainer"),
        TrainerState,
        str(folder / ckpt.META_FILE),
        "a checkpoint of training (field trainer)",
    )
    set_rng_state(ranks[group.rank])
    prefix = f"rank{group.rank}."
    try:  # the task says what of its state does not fit
        trainer.task.load_state_tensors(
            {
                key.removeprefix(prefix): tensor
                for key, tensor in weights.load_state(folder, trainer.device).items()
                if key.startswith(prefix)
            }
        )
    except ValueError as error:
        raise RosettaError(f"{folder / ckpt.STATE_FILE}: {error}") from None
    if trainer.updater.scaler is not None and meta.get("grad_scaler") is not None:
        try:
            trainer.updater.scaler.load_state_dict(meta["grad_scaler"])
        except (KeyError, TypeError, ValueError, RuntimeError) as error:
            raise RosettaError(
                f"{folder / ckpt.META_FILE}: grad_scaler: {error!r}"
            ) from None
    trainer.forget_metrics_after_state()
    trainer.saved_step = trainer.state.step
    state = trainer.state
    trainer.log(
        f"resumed from {folder} (step {state.step}, "
        f"epoch {state.epoch + 1}, batch {state.batch_in_epoch})"
    )
