"""Generated values against every boundary: each command-line option, each
config key, each server field.

The promise under test: a value is either used, with complete output, or
refused with a one-line error (exit status 2, or a 4xx naming the field);
never a traceback, a 500, a silently wrong result, or a change to anything
but the output.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rosetta.cli import build_parser, main
from rosetta.config.reading import config_to_dict
from rosetta.config.sections import DecodeConfig, TrainConfig
from rosetta.errors import RosettaError
from rosetta.jobs.loading import load_translator
from rosetta.jobs.run_config import config_from_dict
from rosetta.serve.app import create_app
from rosetta.serve.schemas import TranslateRequest
from tests.support.toy import toy_config

SETTINGS = settings(
    deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# What a careless or hostile user types where a number belongs.
NUMBER_TEXT = st.one_of(
    st.integers(min_value=-100, max_value=100).map(str),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(
        ["inf", "-inf", "nan", "1e300", "-0", "0", "1", "2.5", "", "abc", "0x10"]
    ),
)
# ... and in JSON or YAML.
ANY_NUMBER = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    st.text(max_size=5),
)


FLAG_NAMES = ("whole number", "number")  # what ``rosetta.runtime.limits.flag`` makes


def numeric_options():
    """(command path, option string, action, what the command needs besides)
    of every option that takes a number."""

    def needed(parser) -> list[str]:
        """Placeholders for the command's required arguments."""
        argv = []
        for action in parser._actions:
            value = next(iter(action.choices)) if action.choices else "X"
            if not action.option_strings and action.nargs != 0:
                if not isinstance(action, argparse._SubParsersAction):
                    argv.append(value)
            elif action.required:
                argv += [action.option_strings[-1], value]
        return argv

    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, (*path, name))
            elif (
                callable(action.type)
                and action.option_strings
                and (
                    action.type in (int, float)
                    or getattr(action.type, "__name__", "")
                    in ("whole number", "number")
                )
            ):
                yield path, action.option_strings[-1], action, needed(parser)

    return list(walk(build_parser(), ()))


OPTIONS = numeric_options()


def test_every_numeric_option_is_checked_by_the_shared_validators():
    assert len(OPTIONS) > 40
    raw = [
        (path, flag) for path, flag, action, _ in OPTIONS if action.type in (int, float)
    ]
    assert raw == []


@settings(SETTINGS, max_examples=300)
@given(option=st.sampled_from(OPTIONS), text=NUMBER_TEXT)
def test_a_number_option_is_a_finite_value_in_range_or_a_usage_error(
    option, text, capsys
):
    path, flag, action, needed = option
    argv = [*path, *needed, f"{flag}={text}"]
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as stop:
        assert stop.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "error: argument" in err, err
        return
    value = getattr(args, action.dest)
    values = value if isinstance(value, list) else [value]
    for item in values:
        assert isinstance(item, int | float) and not isinstance(item, bool)
        assert math.isfinite(item), (argv, item)


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


def snapshot(folder: Path) -> dict[str, str]:
    return {
        str(path): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


SEARCH_FLAGS = st.fixed_dictionaries(
    {},
    optional={
        "--beam": st.sampled_from(["1", "2", "5", "0", "-1", "true", "1.5"]),
        "--alpha": NUMBER_TEXT,
        "--max-len-a": NUMBER_TEXT,
        "--max-len-b": NUMBER_TEXT,
        "--batch-size": NUMBER_TEXT,
        "--top-k": NUMBER_TEXT,
        "--top-p": NUMBER_TEXT,
        "--temperature": NUMBER_TEXT,
        "--seed": NUMBER_TEXT,
        "--sample": st.just(None),
    },
)


@pytest.mark.slow
@settings(SETTINGS, max_examples=40)
@given(flags=SEARCH_FLAGS)
def test_translate_with_any_search_flags_is_complete_or_refused(
    toy_run, tmp_path_factory, flags, capsys
):
    run = toy_run("transformer")
    folder = tmp_path_factory.mktemp("fuzz-translate")
    source = folder / "in.txt"
    source.write_text("alpha beta gamma\n\ndelta eps\nzeta\n")
    before = snapshot(run), source.read_bytes()
    output = folder / "out.txt"
    argv = ["translate", "-m", str(run), "-i", str(source), "-o", str(output)]
    for flag, value in flags.items():
        argv += [flag] if value is None else [f"{flag}={value}"]
    capsys.readouterr()
    status = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if status == 0:
        lines = output.read_text().split("\n")
        assert len(lines) == 5 and lines[-1] == ""  # four lines, each ended
        assert lines[1] == ""  # the blank line stays blank
    else:
        assert status == 2, err
        assert not output.exists()
        messages = [line for line in err.splitlines() if not line.startswith("model:")]
        assert len(messages) == 1, err
    assert (snapshot(run), source.read_bytes()) == before


@pytest.fixture(scope="module")
def server(toy_run):
    translator = load_translator(toy_run("transformer"), device="cpu")
    with TestClient(create_app(translator), raise_server_exceptions=False) as client:
        yield client


FIELDS = [name for name in TranslateRequest.model_fields if name != "sentences"]


@pytest.mark.slow
@settings(SETTINGS, max_examples=80)
@given(
    fields=st.dictionaries(st.sampled_from(FIELDS), ANY_NUMBER, max_size=3),
    sentences=st.lists(st.text(max_size=20), min_size=1, max_size=3),
)
def test_any_request_is_answered_or_refused_never_a_500(server, fields, sentences):
    if "beam_size" in fields and isinstance(fields["beam_size"], int):
        fields["beam_size"] = max(-1, min(fields["beam_size"], 4))  # keep it quick
    if isinstance(fields.get("max_len_b"), int):
        fields["max_len_b"] = min(fields["max_len_b"], 20)
    body = json.dumps({"sentences": sentences, **fields}, allow_nan=True)
    response = server.post(
        "/translate", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code in (200, 422), (body, response.text)
    if response.status_code == 200:
        assert len(response.json()["translations"]) == len(sentences)
    else:
        assert response.json()["detail"]
