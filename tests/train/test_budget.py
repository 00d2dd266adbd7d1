"""A run's budget: minutes count validation, the last validation fits in
them, and one progress bar counts the whole run."""

import json
import time

import pytest

from rosetta.config.sections import TrainConfig
from rosetta.jobs.training import run_training
from rosetta.train import budget as budget_module
from rosetta.train.budget import Budget
from rosetta.train.trainer import TrainerState
from rosetta.train.translation_task import TranslationTask
from tests.support.toy import toy_config


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = Clock()
    monkeypatch.setattr(budget_module.time, "perf_counter", fake)
    return fake


def test_minutes_count_every_second_and_earlier_sessions(clock):
    state = TrainerState(elapsed_seconds=30.0)  # a resumed run
    budget = Budget(TrainConfig(max_minutes=1), state, show=False)
    clock.now += 29.0
    assert not budget.minutes_spent()
    assert state.elapsed_seconds == 59.0
    clock.now += 1.0
    assert budget.minutes_spent()


def test_the_longest_validation_is_kept_back_for_the_last_one(clock):
    state = TrainerState()
    budget = Budget(TrainConfig(max_minutes=1), state, show=False)
    for seconds in (5.0, 8.0, 3.0):
        with budget.validating():
            clock.now += seconds
    assert budget.reserve == 8.0
    assert state.elapsed_seconds == 16.0
    clock.now += 60.0 - 16.0 - 8.0 - 0.5
    assert not budget.minutes_spent()
    clock.now += 0.5  # 52 s spent, 8 s kept for the last validation
    assert budget.minutes_spent()


def test_a_run_that_has_not_validated_does_so_at_half_its_minutes(clock):
    state = TrainerState()
    budget = Budget(TrainConfig(max_minutes=2), state, show=False)
    clock.now += 59.0
    assert not budget.first_validation_due()
    clock.now += 1.0
    assert budget.first_validation_due()
    with budget.validating():
        clock.now += 10.0
    assert not budget.first_validation_due()  # its time is known now
    no_minutes = Budget(TrainConfig(max_steps=10), TrainerState(), show=False)
    clock.now += 1000.0
    assert not no_minutes.first_validation_due()


@pytest.mark.parametrize(
    ("limits", "per_epoch", "expected"),
    [
        ({"max_steps": 100, "max_epochs": None}, 30, 100),
        ({"max_steps": None, "max_epochs": 2}, 30, 60),
        ({"max_steps": 50, "max_epochs": 2}, 30, 50),  # whichever ends first
        ({"max_steps": None, "max_epochs": None, "max_minutes": 5}, 30, None),
    ],
)
def test_the_bar_counts_the_updates_the_run_will_make(limits, per_epoch, expected):
    budget = Budget(TrainConfig(**limits), TrainerState(), show=False)
    assert budget.total_updates(per_epoch) == expected


def test_a_minutes_budget_holds_with_slow_validation(tmp_path, monkeypatch):
    """Validation takes a fifth of the budget each time; the run still ends
    within it, its last validation included (before, the minutes counted
    updates only)."""
    slow = 1.2  # seconds per validation
    validate = TranslationTask.validate

    def slow_validate(task):
        time.sleep(slow)
        return validate(task)

    monkeypatch.setattr(TranslationTask, "validate", slow_validate)
    config, _ = toy_config(
        tmp_path,
        "train.max_minutes=0.1",
        "train.max_steps=null",
        "train.max_epochs=null",
        "train.validate_every=5",
    )
    run_training(config, tmp_path / "run")
    index = json.loads((tmp_path / "run" / "checkpoints.json").read_text())
    meta = tmp_path / "run" / index["latest"] / "checkpoint.json"
    trainer = json.loads(meta.read_text())["trainer"]
    budget_seconds = 6.0
    # within the budget, but for noise in how long the last validation took
    assert trainer["elapsed_seconds"] <= budget_seconds + 1.0
    assert trainer["elapsed_seconds"] >= budget_seconds * 0.6  # it did train
    validations = [
        json.loads(line)
        for line in (tmp_path / "run" / "metrics.jsonl").open()
        if '"valid"' in line
    ]
    assert len(validations) >= 2
    # the minutes hold the validations' time, not only the updates'
    assert trainer["elapsed_seconds"] >= len(validations) * slow


def test_the_minutes_bar_names_what_it_does_once():
    """Its label reads "training: 42%", also after validation relabelled it."""
    import io

    from tqdm import tqdm

    from rosetta.train.budget import MINUTES_BAR

    out = io.StringIO()
    bar = tqdm(total=10.0, desc="training", bar_format=MINUTES_BAR, file=out)
    bar.set_description("validating")
    bar.update(3)
    bar.set_description("training")
    bar.update(2)
    bar.close()
    lines = out.getvalue().replace("\r", "\n").split("\n")
    shown = [line for line in lines if line.strip()]
    assert shown[-1].startswith("training:  50%|")
    assert not any(": :" in line for line in shown)


def seconds_left(clock, limits: dict, seconds_per_update: float) -> int:
    """The bar's time left after 100 updates of a run of ``limits``."""
    state = TrainerState()
    budget = Budget(TrainConfig(**limits), state, show=True)
    budget.open_bar(batches_per_epoch=500, batches_per_update=1)
    for step in range(1, 101):
        clock.now += seconds_per_update
        state.step = step
        budget.advance()
    budget.close()
    minutes, seconds = budget.figures["left"].split(":")
    return int(minutes) * 60 + int(seconds)


def test_the_time_left_is_the_budgets_when_minutes_end_first(clock):
    """A run of 1,000 updates within 2 minutes: at 100 updates in 110 s, the
    bar says the 10 s the minutes leave, not the 18 minutes the updates
    would take."""
    assert seconds_left(clock, {"max_steps": 1000, "max_minutes": 2}, 1.1) == 10


def test_the_time_left_is_the_updates_when_they_end_first(clock):
    left = seconds_left(clock, {"max_steps": 120, "max_minutes": 60}, 1.0)
    assert 15 <= left <= 25  # 20 updates at one a second


def test_a_resumed_runs_bar_says_its_clock_starts_at_the_resume(capsys):
    state = TrainerState()
    state.step = 1200
    budget = Budget(TrainConfig(max_steps=2000), state, show=True)
    budget.open_bar(batches_per_epoch=500, batches_per_update=1)
    budget.bar.refresh()
    assert "training (resumed at update 1,200; times since)" in capsys.readouterr().err
    fresh = Budget(TrainConfig(max_steps=2000), TrainerState(), show=True)
    fresh.open_bar(batches_per_epoch=500, batches_per_update=1)
    fresh.bar.refresh()
    assert "resumed" not in capsys.readouterr().err
