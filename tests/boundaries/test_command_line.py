"""Values and arguments given on the command line, and the environment a
command starts in: every option that takes a number, checked where it
enters by the shared validators (the same definitions the configuration and
the server use); counts, sizes and threads checked against what the machine
can do before any work starts; options that cannot work together.

The promise: a value is used, with complete output, or refused with a
one-line error and exit status 2 before any work starts (a value beyond the
machine's cores is capped with a notice); never a traceback, a silently
wrong result, or a change to anything but the output.
"""

from __future__ import annotations

import argparse
import hashlib
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rosetta.cli import build_parser, main
from rosetta.errors import RosettaError
from rosetta.runtime import limits, threads
from rosetta.runtime.limits import Count, LengthRatio
from tests.runtime.test_outputs import run_refused
from tests.support.bad_input import (
    Case,
    gets_a_clear_error,
    run_refused_without_traceback,
)
from tests.support.generated_values import SETTINGS

# What a careless or hostile user types where a number belongs.
NUMBER_TEXT = st.one_of(
    st.integers(min_value=-100, max_value=100).map(str),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(
        ["inf", "-inf", "nan", "1e300", "-0", "0", "1", "2.5", "", "abc", "0x10"]
    ),
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


def test_a_flag_type_says_what_is_wrong_in_one_line():
    import argparse

    assert limits.flag(LengthRatio)("1.5") == 1.5
    for text, reason in [
        ("inf", "finite"),
        ("nan", "finite"),
        ("1e300", "less than or equal to 1000"),
        ("abc", "expected a number"),
    ]:
        with pytest.raises(argparse.ArgumentTypeError, match=reason):
            limits.flag(LengthRatio)(text)
    with pytest.raises(argparse.ArgumentTypeError, match="expected a whole number"):
        limits.flag(Count)("2.5")


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


def test_a_task_band_must_be_closed(tmp_path, capsys):
    argv = ["task", "copy", "-o", str(tmp_path / "t"), "--lengths", "5-"]
    assert main(argv) == 2
    assert "length band '5-': expected LOW-HIGH" in capsys.readouterr().err
    argv = ["task", "copy", "-o", str(tmp_path / "t"), "--alphabet", ""]
    assert main(argv) == 2
    assert "the alphabet is empty" in capsys.readouterr().err
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("flag", ["--count", "--valid", "--test"])
def test_a_task_too_large_to_hold_is_refused_at_once(tmp_path, capsys, flag):
    argv = ["task", "copy", "-o", str(tmp_path / "tk"), flag, "1000000000000"]
    run_refused(argv, capsys, "GB of memory; this machine has")
    assert not (tmp_path / "tk").exists()


def test_a_positions_plot_too_large_is_run_refused(tmp_path, capsys):
    argv = ["plot", "positions", "--length", "1000000000000"]
    run_refused([*argv, "-o", str(tmp_path / "p.png")], capsys, "GB of memory")


def test_threads_beyond_the_cores_are_capped_with_a_notice(capsys):
    cores = threads.cores()
    assert threads.at_most_cores(cores) == cores
    assert threads.at_most_cores(99999999999999999999) == cores
    assert f"more than the {cores} cores" in capsys.readouterr().err


def test_a_malformed_local_world_size_is_one_line(monkeypatch):
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "abc")
    with pytest.raises(RosettaError, match="LOCAL_WORLD_SIZE='abc'"):
        threads.threads_beside(0.0)


@pytest.mark.parametrize("kind", ["nat", "nat-ctc"])
def test_exporting_a_model_ctranslate2_cannot_run_is_one_line(
    toy_run, tmp_path, capsys, kind
):
    pytest.importorskip("ctranslate2")
    argv = ["export", "ctranslate2", "-m", str(toy_run(kind))]
    expected = "(arch nat); ctranslate2 takes"
    run_refused([*argv, "-o", str(tmp_path / "e")], capsys, expected)
    assert not Path(tmp_path / "e").exists()


CASES = [
    Case(
        "search options that cannot work together",
        lambda tmp: ["translate", "-m", str(tmp), "--attention", "-i", "-"],
        "--attention needs --format jsonl",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_gets_a_clear_error(case, tmp_path, capsys, recwarn):
    gets_a_clear_error(case, tmp_path, capsys, recwarn)


def test_a_device_that_does_not_exist_is_named(toy_run, capsys):
    argv = ["translate", "-m", str(toy_run("transformer")), "--device", "quantum"]
    run_refused_without_traceback(
        [*argv, "-i", "/dev/null"], capsys, "device 'quantum': use auto"
    )


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
