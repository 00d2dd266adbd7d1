"""The training loop: warm-up, clipping, validation, early stopping, atomic
checkpoints and exact resume, for any task (``TranslationTask``,
``LanguageModelTask``): the task says what an epoch's batches are, what a
batch's loss is, and how to validate.

The data position is part of the state: epoch ``e``'s batch order comes from
a generator seeded with ``(seed, e)``, so resuming at ``(epoch, batch)`` with
the saved RNG, model, optimizer, schedule and the task's own tensors (a
language model's memory) continues exactly as an uninterrupted run would.

An update takes consecutive batches (``task.batches_per_update``): each
process (``rosetta.train.distributed``) accumulates the gradients of its
share, ``DistributedDataParallel`` exchanges them once, and the update is
that of the summed loss of all of them over their tokens, however split.
Only rank 0 logs, validates and saves.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from pydantic import ConfigDict
from tqdm import tqdm

from rosetta.config.reading import config_to_dict
from rosetta.config.schema import Config
from rosetta.errors import RosettaError, Stopped
from rosetta.runs import checkpoint as ckpt
from rosetta.runs.rng import rng_state
from rosetta.runtime.threads import Reassessment
from rosetta.train.budget import Budget, summary
from rosetta.train.distributed import SINGLE_PROCESS, Group
from rosetta.train.interrupt import SignalStop, exit_status
from rosetta.train.metrics import MetricsLog, Window
from rosetta.train.schedule import scheduled_rate
from rosetta.train.training_task import TrainingTask
from rosetta.train.update import Updater, make_adam

MAX_BAD_STEPS = 10  # consecutive non-finite losses before training stops


def checkpoint_name(step: int) -> str:
    return f"checkpoint-{step:07d}"


@dataclass
class TrainerState:
    # read back from checkpoints: a renamed or mistyped field is an error
    __pydantic_config__ = ConfigDict(extra="forbid")

    step: int = 0  # optimizer updates done
    epoch: int = 0  # current epoch (0-based)
    batch_in_epoch: int = 0  # next batch index inside the epoch
    best_score: float | None = None
    best_step: int | None = None
    best_loss: float | None = None  # breaks a tie of the best metric
    validations_without_gain: int = 0
    elapsed_seconds: float = 0.0
    skipped_steps: int = 0
    overflow_steps: int = 0  # fp16 updates skipped as the loss scale shrank


class Trainer:
    """Trains ``model`` (already given to ``task``) into ``run_dir``."""

    def __init__(
        self,
        config: Config,
        run_dir: Path,
        model: torch.nn.Module,
        task: TrainingTask,
        device: torch.device,
        group: Group = SINGLE_PROCESS,
        family_compiles: bool = True,  # Family.compiles: auto compiles it
    ):
        self.config, self.cfg = config, config.train
        self.run_dir = run_dir
        self.model = model.to(device)
        self.task = task
        self.group = group
        self.device = device
        self.optimizer = make_adam(self.model, self.cfg)
        self.updater = Updater(
            self.model, self.optimizer, self.cfg, device, group, task.loss_sum, self.log
        )
        self.updater.compile_if_wanted(family_compiles)
        self.state = TrainerState()
        self.bad_steps_in_a_row = 0
        self.saved_step: int | None = None  # the update the last checkpoint holds
        self.metrics = MetricsLog.for_run(run_dir, self.cfg.tensorboard)

    @property
    def is_main(self) -> bool:
        return self.group.is_main

    def log(self, message: str) -> None:
        if self.is_main:
            tqdm.write(message)

    def record(self, kind: str, **values: Any) -> None:
        if self.is_main:
            self.metrics.append(kind, self.state.step, **values)

    def save(self) -> None:
        """Write a checkpoint, then the index naming it (``record_checkpoint``),
        with every process's random state (each draws its own dropout) and
        the tensors its task carries (under ``rank{r}.``)."""
        rng = self.group.gather(rng_state())
        carried = self.group.gather(self.task.state_tensors())
        if not self.is_main:
            return
        bad = [n for n, p in self.model.named_parameters() if not p.isfinite().all()]
        if bad:
            raise RosettaError(
                f"non-finite weights at step {self.state.step} ({', '.join(bad[:3])}"
                f"{', ...' if len(bad) > 3 else ''}); the checkpoint was not written"
            )
        name = checkpoint_name(self.state.step)
        meta = {
            "config": config_to_dict(self.config),
            "tokenizers": self.task.tokenizers.to_dict(),
            "trainer": asdict(self.state),
            "rng": rng[0],
            "rng_ranks": rng,
        }
        if self.updater.scaler is not None:
            meta["grad_scaler"] = self.updater.scaler.state_dict()
        state = {
            f"rank{rank}.{key}": tensor
            for rank, tensors in enumerate(carried)
            for key, tensor in tensors.items()
        }
        adam, as_made = self.optimizer, self.updater.as_made()  # eager's settings
        with ckpt.new_checkpoint_folder(self.run_dir / name) as folder, as_made:
            ckpt.write_checkpoint_files(folder, self.model, adam, meta, state)
        ckpt.record_checkpoint(
            self.run_dir,
            name,
            is_best=self.state.best_step == self.state.step,
            best_score=self.state.best_score,
            metric=self.best_metric,
            keep_last=self.cfg.keep_last,
        )
        self.saved_step = self.state.step

    def forget_metrics_after_state(self) -> None:
        """Forget log records written after the checkpoint we resume from."""
        if self.is_main:
            self.metrics.forget_after(self.state.step)

    def stop_if_signalled(self, signals: SignalStop) -> None:
        """After a SIGINT or SIGTERM to any training process: save this
        update's checkpoint, unless the last one holds it, and stop."""
        if not self.group.sum(float(signals.received is not None), self.device):
            return
        if self.saved_step != self.state.step:
            self.budget.tick()
            self.save()
        self.group.barrier()  # the checkpoint is on disk before any process ends
        self.budget.close()
        self.metrics.close()
        name = signals.received or "SIGTERM"  # another process's signal
        raise Stopped(
            f"stopped by {name} at update {self.state.step}; "
            f"{self.run_dir / checkpoint_name(self.state.step)} holds it",
            exit_status(name),
        )

    def train_step(self, group: list[Any]) -> tuple[float, int] | None:
        """One update from the batches ``group`` (this process runs its share):
        (mean loss per target token, target tokens), or None if skipped."""
        lr = scheduled_rate(self.state.step + 1, self.cfg)
        share = self.task.share(group, self.group.rank, self.group.world_size)
        loss, tokens, not_finite = self.updater.step(share, lr)
        if not_finite == "overflow":  # expected now and then with fp16
            self.state.overflow_steps += 1
            return None
        if not_finite:
            return self._skip(not_finite)
        self.state.step += 1
        self.bad_steps_in_a_row = 0
        return loss, tokens

    def _skip(self, what: str) -> None:
        self.state.skipped_steps += 1
        self.bad_steps_in_a_row += 1
        self.log(
            f"warning: non-finite {what} at step {self.state.step + 1}; "
            f"update skipped ({self.state.skipped_steps} so far)"
        )
        if self.bad_steps_in_a_row >= MAX_BAD_STEPS:
            raise RosettaError(
                f"{MAX_BAD_STEPS} non-finite losses in a row at step "
                f"{self.state.step}: lower train.lr or check the data"
            )
        return None

    @property
    def best_metric(self) -> str:
        return self.task.best_metric

    def after_validation(self, result: dict[str, float]) -> bool:
        """Track the best score; True if early stopping says stop."""
        stopping = self.cfg.early_stopping
        metric = self.best_metric
        score = -result[metric] if metric == "loss" else result[metric]
        state, loss = self.state, result.get("loss")
        gained = state.best_score is None or score > state.best_score
        # an equal score goes to the lower loss, but is no gain for stopping
        tie = not gained and score == state.best_score and loss is not None
        if gained or (tie and (state.best_loss is None or loss < state.best_loss)):
            state.best_score, state.best_step = score, state.step
            state.best_loss = loss
        if gained:
            state.validations_without_gain = 0
        else:
            state.validations_without_gain += 1
        self.record("valid", **result)
        if self.is_main and self.task.examples:
            self.metrics.examples(state.step, self.task.examples)
        shown = ", ".join(f"{k} {v:.3f}" for k, v in result.items())
        self.log(
            f"step {state.step}: valid {shown} "
            f"(best {metric} at step {state.best_step})"
        )
        return stopping.patience is not None and (
            state.validations_without_gain >= stopping.patience
        )

    # ---- the loop ----------------------------------------------------------
    def out_of_budget(self) -> bool:
        if self.budget.counted_spent():
            return True
        if self.cfg.max_minutes is None:  # no clock to agree on
            return False
        # processes time themselves apart: rank 0's clock decides for all
        return self.group.decide(self.budget.minutes_spent(), self.device)

    def validate_and_save(self) -> bool:
        """Validate and save on rank 0; True (in every process) to stop early."""
        stop = False
        with self.budget.validating():
            if self.task.has_validation and self.is_main:
                stop = self.after_validation(self.task.validate())
            self.budget.tick()  # the checkpoint holds the minutes spent
            self.save()
        return self.group.decide(stop, self.device)

    def train(self) -> TrainerState:
        """Train to the end of the budget; a SIGINT or SIGTERM on the way
        saves the update reached and raises ``Stopped``."""
        with SignalStop() as signals:
            self.budget = Budget(self.cfg, self.state, show=self.is_main)
            try:
                return self._train(signals)
            except BaseException:
                self.budget.close_bar()  # the next training's bars on their own lines
                raise

    def _train(self, signals: SignalStop) -> TrainerState:
        state = self.state
        if self.out_of_budget():
            self.log("the training budget is already spent; nothing to do")
            return state
        if not self.task.has_validation:
            self.log(
                "warning: no validation set (data.valid): no scores on "
                "held-out data, no early stopping, and the run's best "
                "checkpoint is its latest"
            )
        last_validated = stepped_from = state.step
        per_update = self.task.batches_per_update(self.group.world_size)
        # threads left to the policy follow the machine's other work
        reassess = Reassessment() if self.cfg.threads is None else None
        while not self.out_of_budget():
            batches = self.task.epoch_batches(state.epoch)
            self.budget.open_bar(len(batches), per_update)
            window = Window()
            stop = False
            while state.batch_in_epoch < len(batches) and not self.out_of_budget():
                self.stop_if_signalled(signals)
                start = state.batch_in_epoch
                group = batches[start : start + per_update]
                first = state.step == stepped_from
                with self.budget.updating(self.updater.compiled, first):
                    outcome = self.train_step(group)
                state.batch_in_epoch += len(group)
                self.budget.advance()
                if reassess is not None and (change := reassess()):
                    self.log(change)
                if outcome is None:
                    continue
                window.add(*outcome)
                if state.step % self.cfg.log_every == 0:
                    lr = self.updater.learning_rate
                    mean, speed = window.mean_loss(), window.tokens_per_second()
                    self.budget.advance(
                        loss=f"{mean:.3f}", lr=f"{lr:.2e}", tok_s=f"{speed:.0f}"
                    )
                    self.record(
                        "train",
                        epoch=state.epoch + 1,
                        loss=mean,
                        lr=lr,
                        tokens_per_s=speed,
                        elapsed_s=state.elapsed_seconds,
                    )
                    window = Window()
                due = state.step % self.cfg.validate_every == 0
                if not due and self.cfg.max_minutes is not None:
                    # rank 0's clock decides for all, as for the budget
                    first = self.budget.first_validation_due()
                    due = self.group.decide(first, self.device)
                if due:
                    last_validated = state.step
                    if self.validate_and_save():
                        stop = True
                        break
                    window = Window()  # speed excludes validation
            if stop:
                self.log(
                    f"early stopping: no gain in "
                    f"{self.cfg.early_stopping.patience} validations"
                )
                break
            if state.batch_in_epoch >= len(batches):
                state.epoch += 1
                state.batch_in_epoch = 0
        # The last validation's checkpoint already holds this step, unless
        # training went on after it (or never reached one).
        if (
            last_validated != state.step
            or not (self.run_dir / ckpt.INDEX_FILE).exists()
        ):
            self.validate_and_save()
        self.budget.close()
        self.log(summary(state))
        self.metrics.close()
        return state
