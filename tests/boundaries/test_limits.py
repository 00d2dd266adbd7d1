"""Every number is checked once, where it enters, the same way everywhere: the
command line, the config and the search options the server builds."""

from __future__ import annotations

import math

import pytest

from rosetta.cli import main
from rosetta.config.reading import config_to_dict
from rosetta.errors import RosettaError
from rosetta.jobs.run_config import config_from_dict
from rosetta.runtime.limits import Count, LengthRatio, Seed, check, flag
from rosetta.search.options import SearchOptions
from rosetta.serve.schemas import TranslateRequest
from tests.support.toy import toy_config

NOT_FINITE = [math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("value", [*NOT_FINITE, 1e300, -1.0])
def test_a_length_limit_must_be_finite_and_in_range(value):
    with pytest.raises(ValueError, match="max_len_a"):
        SearchOptions(max_len_a=value)
    with pytest.raises(ValueError):
        TranslateRequest(sentences=["a"], max_len_a=value)


@pytest.mark.parametrize(
    "field, value",
    [
        ("alpha", math.nan),
        ("alpha", math.inf),
        ("temperature", math.nan),
        ("temperature", 1e-300),
        ("top_p", math.nan),
        ("beam_size", True),
        ("beam_size", 2.0),
        ("seed", 2**64),
        ("seed", -1),
        ("top_k", -1),
    ],
)
def test_search_options_refuse_what_no_search_can_use(field, value):
    with pytest.raises(ValueError, match=field):
        SearchOptions(**{field: value})
    with pytest.raises(ValueError):
        TranslateRequest(sentences=["a"], **{field: value})


def test_whole_numbers_are_not_booleans_or_fractions():
    assert check(Count, 3, "count") == 3
    for value in (True, 2.5, 0, "3"):
        with pytest.raises(ValueError, match="count"):
            check(Count, value, "count")
    assert check(Seed, 2**63 - 1, "seed") == 2**63 - 1


def test_a_flag_type_says_what_is_wrong_in_one_line():
    import argparse

    assert flag(LengthRatio)("1.5") == 1.5
    for text, reason in [
        ("inf", "finite"),
        ("nan", "finite"),
        ("1e300", "less than or equal to 1000"),
        ("abc", "expected a number"),
    ]:
        with pytest.raises(argparse.ArgumentTypeError, match=reason):
            flag(LengthRatio)(text)
    with pytest.raises(argparse.ArgumentTypeError, match="expected a whole number"):
        flag(Count)("2.5")


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["translate", "-m", "RUN", "--max-len-a", "inf"], "--max-len-a: must be"),
        (["translate", "-m", "RUN", "--max-len-a", "nan"], "--max-len-a: must be"),
        (["translate", "-m", "RUN", "--batch-size", "-1"], "--batch-size: must be"),
        (["translate", "-m", "RUN", "--alpha", "nan"], "--alpha: must be"),
        (["generate", "-m", "RUN", "--prompt", "a", "--temperature", "nan"], "finite"),
        (["generate", "-m", "RUN", "--prompt", "a", "--seed", str(2**64)], "--seed"),
        (["generate", "-m", "RUN", "--prompt", "a", "--tokens", "-5"], "--tokens"),
        (["perplexity", "-m", "RUN", "--text", "t", "--streams", "0"], "--streams"),
        (["perplexity", "-m", "RUN", "--text", "t", "--memory", "-5"], "--memory"),
        (["train", "CONFIG", "--nproc", "0"], "--nproc: must be"),
        (["task", "copy", "-o", "OUT", "--count", "-5"], "--count: must be"),
        (["translate", "-m", "RUN", "--npd", "100000"], "--npd: must be"),
    ],
)
def test_bad_numbers_on_the_command_line_stop_before_any_work(argv, expected, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err, err
    assert "Traceback" not in err


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


def test_a_task_band_must_be_closed(tmp_path, capsys):
    argv = ["task", "copy", "-o", str(tmp_path / "t"), "--lengths", "5-"]
    assert main(argv) == 2
    assert "length band '5-': expected LOW-HIGH" in capsys.readouterr().err
    argv = ["task", "copy", "-o", str(tmp_path / "t"), "--alphabet", ""]
    assert main(argv) == 2
    assert "the alphabet is empty" in capsys.readouterr().err
    assert not (tmp_path / "t").exists()
