"""TensorBoard event files hold what ``metrics.jsonl`` holds, and a resumed
run hides the events it makes again."""

import json

import pytest

from rosetta.data.corpus import read_corpus
from rosetta.jobs.training import run_training
from rosetta.train.tensorboard import TensorBoardEvents
from rosetta.train.translation_task import SHOWN
from tests.support.toy import toy_config

pytest.importorskip("tensorboard")


def scalars(folder):
    """{tag: {step: value}} of the newest view of the event files."""
    from tensorboard.backend.event_processing.event_accumulator import (
        EventAccumulator,
    )

    events = EventAccumulator(str(folder))
    events.Reload()
    found = {}
    for tag in events.Tags()["scalars"]:
        steps = [event.step for event in events.Scalars(tag)]
        assert len(steps) == len(set(steps)), f"{tag}: a step shown twice"
        found[tag] = {event.step: event.value for event in events.Scalars(tag)}
    return found


def texts(folder, tag="valid/translations"):
    """{step: text} of a text tag."""
    from tensorboard.backend.event_processing.event_accumulator import (
        EventAccumulator,
    )

    events = EventAccumulator(str(folder), size_guidance={"tensors": 0})
    events.Reload()
    found = {}
    for event in events.Tensors(f"{tag}/text_summary"):
        found[event.step] = event.tensor_proto.string_val[0].decode("utf-8")
    return found


def logged(run):
    """{tag: {step: value}} of ``metrics.jsonl``, tagged as the events are."""
    found = {}
    for line in (run / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        for name, value in record.items():
            if name not in ("kind", "step") and isinstance(value, int | float):
                tag = f"{record['kind']}/{name}"
                found.setdefault(tag, {})[record["step"]] = value
    return found


def test_every_logged_value_is_a_scalar_and_resuming_hides_what_is_made_again(
    tmp_path,
):
    settings = ["train.max_epochs=null", "train.log_every=4", "train.validate_every=8"]
    half, _ = toy_config(tmp_path, "train.max_steps=16", *settings)
    run = tmp_path / "run"
    run_training(half, run)
    # a run that died after step 16's checkpoint had logged up to step 20
    (run / "metrics.jsonl").write_text(
        (run / "metrics.jsonl").read_text()
        + '{"kind": "train", "step": 20, "loss": 99.0, "lr": 1.0}\n'
    )
    died = TensorBoardEvents(run / "tensorboard")
    died.add("train", 20, {"loss": 99.0, "lr": 1.0})
    died.close()
    assert scalars(run / "tensorboard")["train/loss"][20] == 99.0
    whole, _ = toy_config(tmp_path, "train.max_steps=24", *settings)
    run_training(whole, run, resume=True)
    expected, found = logged(run), scalars(run / "tensorboard")
    assert {"train/loss", "train/lr", "train/tokens_per_s", "valid/loss"} <= set(found)
    assert found.keys() == expected.keys()
    for tag, values in expected.items():
        assert found[tag].keys() == values.keys(), tag
        for step, value in values.items():
            assert found[tag][step] == pytest.approx(value, rel=1e-6), (tag, step)
    assert found["train/loss"][20] != 99.0  # made again after the resume
    # a few validation translations beside the scores, at every validation
    shown = texts(run / "tensorboard")
    assert sorted(shown) == sorted(expected["valid/loss"]) == [8, 16, 24]
    (source, reference), *_ = read_corpus(whole.data.valid)
    assert all(source in text and reference in text for text in shown.values())
    assert all(text.count("\n") == 2 + SHOWN - 1 for text in shown.values())


def test_no_events_where_they_are_not_wanted(tmp_path):
    config, _ = toy_config(
        tmp_path,
        "train.max_epochs=null",
        "train.max_steps=4",
        "train.tensorboard=false",
    )
    run_training(config, tmp_path / "run")
    assert not (tmp_path / "run" / "tensorboard").exists()
