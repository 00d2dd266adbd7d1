"""Configuration files and ``--set`` keys and values: a file that is not
there, not UTF-8, not YAML or nested without end; an unknown key, a value of
the wrong type, out of range or not finite (refused as the command line and
the server refuse theirs); a model that cannot be built, or cannot fit in
the machine's memory.

The promise: the configuration is used, or refused before any work in one
line naming the file or the key and the problem, exit status 2; never a
traceback.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rosetta.cli import main
from rosetta.config.reading import config_to_dict
from rosetta.config.sections import DecodeConfig, TrainConfig
from rosetta.errors import RosettaError
from rosetta.jobs.run_config import config_from_dict
from tests.runtime.test_outputs import run_refused
from tests.support.bad_input import (
    Case,
    gets_a_clear_error,
    overridden,
    run_refused_without_traceback,
    write,
)
from tests.support.generated_values import ANY_NUMBER, SETTINGS
from tests.support.toy import toy_config


def prepare_with_config_text(text: str) -> Callable:
    def build(tmp: Path) -> list[str]:
        return ["prepare", str(write(tmp, "bad.yaml", text)), "-o", str(tmp / "r")]

    return build


CASES = [
    Case(
        "missing config",
        lambda tmp: ["train", str(tmp / "nowhere" / "c.yaml")],
        "c.yaml: config file not found",
    ),
    Case(
        "unknown config key",
        overridden("train.lrate=0.1"),
        "train.lrate: unknown key",
    ),
    Case(
        "wrong type",
        overridden("train.batch_tokens=many"),
        "train.batch_tokens: Input should be a valid integer",
    ),
    Case(
        "negative size",
        overridden("model.d_model=-8"),
        "model.d_model: Input should be greater than 0",
    ),
    Case(
        "heads not dividing the width",
        overridden("model.heads=5"),
        "heads (5) must divide d_model (32)",
    ),
    Case(
        "options of the other architecture",
        overridden("model.hidden_size=64"),
        "model.hidden_size: unknown key for arch 'transformer'",
    ),
    Case(
        "config that is not YAML",
        prepare_with_config_text("data: [unclosed\n"),
        "bad.yaml:2:1: not valid YAML: expected ',' or ']', but got '<stream end>'",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_gets_a_clear_error(case, tmp_path, capsys, recwarn):
    gets_a_clear_error(case, tmp_path, capsys, recwarn)


def test_a_config_that_is_not_utf8_or_nested_without_end_is_one_line(tmp_path, capsys):
    utf16 = write(tmp_path, "utf16.yaml", "train: {lr: 0.1}\n".encode("utf-16"))
    run_refused_without_traceback(
        ["train", str(utf16)], capsys, "not UTF-8 (invalid byte at 0)"
    )
    deep = write(tmp_path, "deep.yaml", "[" * 20_000 + "]" * 20_000)
    run_refused_without_traceback(
        ["train", str(deep)], capsys, "nested too deeply to be a config"
    )


@pytest.mark.parametrize(
    "key, value",
    [
        ("decode.max_len_a", math.inf),
        ("decode.max_len_a", math.nan),
        ("decode.max_len_b", True),
        ("train.lr", math.nan),
        ("train.seed", -1),
        ("train.keep_last", True),
    ],
)
def test_the_config_refuses_the_same_values(tmp_path, key, value):
    config, _ = toy_config(tmp_path)
    raw = config_to_dict(config)
    section, name = key.split(".")
    raw[section][name] = value
    with pytest.raises(RosettaError, match=name):
        config_from_dict(raw)


NUMERIC_KEYS = [
    (section, name)
    for section, model in (("train", TrainConfig), ("decode", DecodeConfig))
    for name, field in model.model_fields.items()
    if {int, float} & {field.annotation, *getattr(field.annotation, "__args__", ())}
]


@pytest.fixture(scope="module")
def raw_config(tmp_path_factory):
    config, _ = toy_config(tmp_path_factory.mktemp("fuzz-config"))
    return config_to_dict(config)


@settings(SETTINGS, max_examples=300)
@given(key=st.sampled_from(NUMERIC_KEYS), value=ANY_NUMBER)
def test_a_config_number_is_finite_and_typed_or_an_error_naming_its_key(
    raw_config, key, value
):
    section, name = key
    raw = json.loads(json.dumps(raw_config))
    raw[section][name] = value
    try:
        config = config_from_dict(raw)
    except RosettaError as error:
        assert f"{section}.{name}" in str(error)
        return
    accepted = getattr(getattr(config, section), name)
    if accepted is not None:
        assert not isinstance(value, bool)
        assert math.isfinite(accepted)


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("model.d_ff=1000000000", "GB of memory; this machine has"),
        ("model.d_model=1000000000000", "sizes that cannot be built"),
        ("model.max_positions=4", "the model's positions hold 4"),
    ],
)
def test_a_model_that_cannot_fit_is_refused_before_training(
    tmp_path, capsys, setting, expected
):
    _, config = toy_config(tmp_path)
    argv = ["train", str(config), "-o", str(tmp_path / "run"), "--set", setting]
    if "d_model" in setting:
        argv += ["--set", "model.heads=1"]
    run_refused(argv, capsys, expected)


def test_adams_rates_are_checked_in_the_config(tmp_path, capsys):
    _, config = toy_config(tmp_path)
    capsys.readouterr()
    argv = ["train", str(config), "-o", str(tmp_path / "r"), "--set"]
    assert main([*argv, "train.betas=[2.0, 2.0]"]) == 2
    assert "train.betas.0: Input should be less than 1" in capsys.readouterr().err
