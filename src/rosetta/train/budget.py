"""What a training run may spend, and one progress bar for the whole of it.

A run's budget is ``train.max_steps`` updates, ``train.max_epochs`` epochs,
``train.max_minutes`` minutes, or several (the first one spent ends it).
Minutes are wall-clock time inside the training loop, whatever it does:
updates, validation and checkpoints alike, summed over resumed sessions
(``TrainerState.elapsed_seconds``). The run validates once more when the
budget ends, so the loop stops early enough for that validation to fit: it
keeps back as long as the longest validation so far took. A run that has
not validated by the middle of its minutes validates then, to know.

The bar counts updates out of the run's total where steps or epochs bound
it, otherwise minutes out of ``max_minutes``; its estimate of what is left
comes from the pace so far, validation included (compiling left out), so
it corrects itself as the run goes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tqdm import tqdm

from rosetta.config.sections import TrainConfig
from rosetta.runtime.compiled import graphs_compiled

# {l_bar} is "training: 42%|" whether the label was given at the start or
# set since (set_description adds the ": " itself)
MINUTES_BAR = "{l_bar}{bar}| {n:.1f}/{total:.1f} min [{elapsed}<{remaining}{postfix}]"
# updates counted, minutes bounding them too: the time left is the budget's
# own (``left``, the sooner of the two ends), not tqdm's by updates alone
UPDATES_IN_MINUTES_BAR = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]"


class Budget:
    """The budget of one training session (a run, or its continuation) and
    its progress bar (on the main process only)."""

    def __init__(self, cfg: TrainConfig, state: Any, show: bool):
        self.cfg, self.state, self.show = cfg, state, show
        self.started = time.perf_counter()
        self.spent_before = state.elapsed_seconds  # by earlier sessions
        self.reserve = 0.0  # seconds kept back for the last validation
        self.validated = False  # in this session: the reserve is measured
        self.bar: tqdm | None = None
        self.figures: dict[str, str] = {}  # shown after the bar
        self.opened = (state.step, self.started)  # the bar's first update, time

    # ---- the clock ---------------------------------------------------------
    def tick(self) -> None:
        """Brings ``state.elapsed_seconds`` up to now."""
        now = time.perf_counter() - self.started
        self.state.elapsed_seconds = self.spent_before + now

    def minutes_spent(self) -> bool:
        """True once too little of ``max_minutes`` is left for the last
        validation (this process's clock)."""
        if self.cfg.max_minutes is None:
            return False
        self.tick()
        return self.state.elapsed_seconds + self.reserve >= self.cfg.max_minutes * 60

    def counted_spent(self) -> bool:
        """True once ``max_steps`` updates or ``max_epochs`` epochs are done."""
        cfg, state = self.cfg, self.state
        if cfg.max_steps is not None and state.step >= cfg.max_steps:
            return True
        return cfg.max_epochs is not None and state.epoch >= cfg.max_epochs

    def first_validation_due(self) -> bool:
        """True once half of ``max_minutes`` is spent without a validation
        in this session: validating then tells how long the last one will
        take, which the run keeps back from then on."""
        if self.cfg.max_minutes is None or self.validated:
            return False
        self.tick()
        return self.state.elapsed_seconds >= self.cfg.max_minutes * 30

    @contextmanager
    def validating(self) -> Iterator[None]:
        """Times a validation (and its checkpoint): the longest so far is
        kept back from the minutes for the run's last one."""
        started = time.perf_counter()
        if self.bar is not None:
            self.bar.set_description("validating")
        try:
            yield
        finally:
            self.reserve = max(self.reserve, time.perf_counter() - started)
            self.validated = True
            self.tick()
            if self.bar is not None:
                self.bar.set_description("training")
            self.advance()

    @contextmanager
    def updating(self, compiled: bool, first: bool) -> Iterator[None]:
        """Times an update. The first of a ``compiled`` session shows
        "compiling" on the bar; one that did compile (``graphs_compiled``
        rose: a new shape, a recompile) is left out of the pace the estimate
        of what is left comes from. Its minutes still count against
        ``max_minutes``, and the bar's elapsed time holds them."""
        if not compiled:
            yield
            return
        started, graphs = time.perf_counter(), graphs_compiled()
        if first and self.bar is not None:
            self.bar.set_description("compiling")
        try:
            yield
        finally:
            if graphs_compiled() > graphs:
                self.leave_out_of_pace(time.perf_counter() - started)
            if first and self.bar is not None:
                self.bar.set_description("training")

    def leave_out_of_pace(self, seconds: float) -> None:
        """The pace of updates (``seconds_left``'s, and tqdm's moving average
        on an updates bar) as if ``seconds`` had not passed. A minutes bar's
        progress is time itself: nothing to leave out."""
        step, opened = self.opened
        self.opened = (step, opened + seconds)
        if self.bar is not None and self.bar.unit == "update":
            self.bar.last_print_t += seconds  # the next interval starts later

    # ---- the bar -----------------------------------------------------------
    def total_updates(self, updates_per_epoch: int) -> int | None:
        """The run's updates where steps or epochs bound it, else None."""
        totals = []
        if self.cfg.max_steps is not None:
            totals.append(self.cfg.max_steps)
        if self.cfg.max_epochs is not None:
            totals.append(self.cfg.max_epochs * updates_per_epoch)
        return min(totals) if totals else None

    def open_bar(self, batches_per_epoch: int, batches_per_update: int) -> None:
        """The bar, once the first epoch's batches are known."""
        if self.bar is not None or not self.show:
            return
        self.opened = (self.state.step, time.perf_counter())  # for the rate
        per_epoch = math.ceil(batches_per_epoch / batches_per_update)
        total = self.total_updates(per_epoch)
        desc = "training"
        if self.state.step:  # the bar's clock starts now: say so
            desc = f"training (resumed at update {self.state.step:,}; times since)"
        common = {"desc": desc, "mininterval": 2.0, "dynamic_ncols": True}
        if total is None and self.cfg.max_minutes is not None:
            self.tick()
            self.bar = tqdm(
                total=float(self.cfg.max_minutes),
                initial=self.state.elapsed_seconds / 60,
                bar_format=MINUTES_BAR,
                **common,
            )
        else:
            if self.cfg.max_minutes is not None:
                common["bar_format"] = UPDATES_IN_MINUTES_BAR
            self.bar = tqdm(
                total=total, initial=self.state.step, unit="update", **common
            )

    def advance(self, **figures: str) -> None:
        """The bar brought to the current update (or minute), with new
        ``figures`` (loss, learning rate, speed) after it."""
        if self.bar is None:
            return
        self.tick()
        self.figures.update(figures)
        minutes = self.state.elapsed_seconds / 60
        if self.bar.unit == "update":
            done: float = self.state.step
            if self.cfg.max_minutes is not None:
                self.figures["left"] = tqdm.format_interval(self.seconds_left(done))
                self.figures["min"] = f"{minutes:.1f}/{self.cfg.max_minutes:g}"
        else:
            done = min(minutes, self.bar.total)
        self.bar.set_postfix(self.figures, refresh=False)
        self.bar.update(done - self.bar.n)

    def seconds_left(self, done: float) -> float:
        """The sooner of the minutes budget's end and the last update's, at
        the bar's rate so far (updates a second)."""
        assert self.bar is not None and self.cfg.max_minutes is not None
        left = max(0.0, self.cfg.max_minutes * 60 - self.state.elapsed_seconds)
        seconds = time.perf_counter() - self.opened[1]
        updates = done - self.opened[0]
        if updates > 0 and seconds > 0 and self.bar.total:
            left = min(left, max(0.0, self.bar.total - done) * seconds / updates)
        return left

    def close(self) -> None:
        self.tick()
        self.close_bar()

    def close_bar(self) -> None:
        """The bar closed (a training that failed closes it too, so that
        the next one in the process draws its bars on their own lines)."""
        if self.bar is not None:
            self.bar.close()


def summary(state: Any) -> str:
    """What a finished training says (``state``: its ``TrainerState``): how
    far it went, and which checkpoint to use."""
    best = (
        f"best at step {state.best_step}"
        if state.best_step is not None
        else "no validation: the latest checkpoint is the one to use"
    )
    return (
        f"done: {state.step} steps, {state.epoch} epochs, "
        f"{state.elapsed_seconds / 60:.1f} min of training; {best}"
    )
