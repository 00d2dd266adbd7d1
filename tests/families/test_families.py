"""What every model family in the list must do, whichever it is."""

from __future__ import annotations

import json

import pytest
import torch

import rosetta
from rosetta.families import FAMILIES, family_of
from rosetta.inference.text_translator import TextTranslator
from rosetta.jobs.training import run_training
from rosetta.train.training_task import TrainingSetup
from tests.support.toy import toy_config, toy_lm_config


def config_of(family, folder):
    """A toy run of ``family``: its own tiny example section (JSON is YAML)."""
    model = json.dumps(dict(family.example))
    if family.config.TASK == "lm":
        return toy_lm_config(folder, model=model)[0]
    return toy_config(folder, model=model)[0]


def test_the_families_have_distinct_names_and_sections():
    assert len({f.arch for f in FAMILIES}) == len(FAMILIES)
    assert len({f.config for f in FAMILIES}) == len(FAMILIES)
    assert FAMILIES[0].arch == "transformer"  # a section without arch is one


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.arch)
def test_a_family_is_named_by_its_section(family):
    config = family.config.model_validate({"arch": family.arch})
    assert family_of(config) is family
    assert family.summary
    assert family.config.model_fields["arch"].description


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.arch)
def test_a_family_gives_a_tiny_example_of_its_section(family):
    section = family.config.model_validate(dict(family.example))
    assert family_of(section) is family
    sizes = [v for k, v in section.model_dump().items() if k.startswith("d_")]
    assert sizes and max(sizes) <= 128  # tiny: what the tests can train


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.arch)
def test_every_family_trains_a_step_and_loads_through_rosetta_load(family, tmp_path):
    config = config_of(family, tmp_path)
    assert family_of(config.model) is family
    data = family.prepare(config, tmp_path / "prepared", print)
    model = family.build(
        config.model, len(data.tokenizers.src), len(data.tokenizers.tgt)
    )
    setup = TrainingSetup(
        config, model, data, torch.device("cpu"), tmp_path / "prepared", 0, 1, print
    )
    task = family.training_task(setup)
    batch, tokens = task.share(task.epoch_batches(0)[:1], 0, 1)[0]
    assert tokens > 0
    assert torch.isfinite(task.loss_sum(model, batch))

    run = tmp_path / "run"
    steps = config.train.model_copy(update={"max_steps": 2, "validate_every": 2})
    run_training(config.model_copy(update={"train": steps}), run)
    loaded = rosetta.load(run, device="cpu")
    if family.config.TASK == "lm":
        assert not isinstance(loaded, TextTranslator)
        assert loaded.generate("ROMEO:", tokens=5, seed=1).startswith("ROMEO:")
    else:
        assert isinstance(loaded, TextTranslator)
        assert loaded.one_pass == (family.arch == "nat")
        assert len(loaded.translate(["alpha beta", ""])) == 2
