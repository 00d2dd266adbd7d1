"""Text the user gives Rosetta to read: corpora (parallel files, TSV,
gzip), the files to translate, and standard input.

Bad text is one line naming the file, the line and the problem, exit status
2, no traceback: sides of different lengths, invalid UTF-8, a TSV line
without a tab, an empty or fully-filtered corpus, a missing file, a carriage
return inside a line. Accepted text (CRLF line ends, a 1 MB line) succeeds
with a report instead. And for any text (generated: any script, control
characters, blank lines) the reader returns exactly the lines written, the
tokenizer never fails, and translation gives one single line out per line
in, through the Python API and the command line.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rosetta.cli import main
from rosetta.config.sections import TokenizerConfig
from rosetta.data.corpus import read_lines
from rosetta.data.text import read_text
from rosetta.data.tokenizer import SentencePieceTokenizer
from rosetta.errors import RosettaError
from rosetta.jobs.loading import load_translator
from rosetta.jobs.training import run_training
from tests.support.bad_input import (
    Case,
    config_with,
    gets_a_clear_error,
    model_case,
    overridden,
    write,
)
from tests.support.toy import WORDS, toy_config


def prepare_with_train_files(src: bytes | str, tgt: bytes | str) -> Callable:
    def build(tmp: Path) -> list[str]:
        config = config_with(tmp)
        write(tmp, "1.src", src)  # the toy config's training files
        write(tmp, "1.tgt", tgt)
        return ["prepare", config, "-o", str(tmp / "run")]

    return build


def prepare_with_tsv(text: bytes) -> Callable:
    def build(tmp: Path) -> list[str]:
        write(tmp, "pairs.tsv", text)
        config = write(tmp, "tsv.yaml", "data: {train: {tsv: pairs.tsv}}\n")
        return ["prepare", str(config), "-o", str(tmp / "run")]

    return build


CASES = [
    Case(
        "parallel files of different lengths",
        prepare_with_train_files("a b\nc d\n", "A B\n"),
        "1.src has 2 lines but {tmp}/1.tgt has 1",
    ),
    Case(
        "invalid UTF-8",
        prepare_with_train_files(b"a b\nc \xff d\n", "A B\nC D\n"),
        "1.src:2: invalid UTF-8 at byte 2",
    ),
    Case(
        "TSV line without a tab",
        prepare_with_tsv(b"a b\tA B\nno tab here\n"),
        "pairs.tsv:2: no tab found",
    ),
    Case("empty corpus", prepare_with_train_files("", ""), "1.src: empty corpus"),
    Case(
        "every pair filtered out",
        overridden("data.max_len=1"),
        "every pair was filtered out",
    ),
    Case(
        "CRLF line ends are accepted",
        prepare_with_train_files("a b\r\nc d\r\n", "A B\r\nC D\r\n"),
        "",
        status=0,
    ),
    Case(
        "a 1 MB single line is filtered, not a crash",
        prepare_with_train_files(
            "alpha beta\n" + "gamma " * 170_000 + "\n", "ALPHA BETA\nG\n"
        ),
        "",
        status=0,
    ),
    Case(
        "missing file",
        overridden("data.train.src=absent.src"),
        "absent.src: file not found",
    ),
    Case(
        "translate input with invalid UTF-8",
        model_case(lambda tmp, checkpoint: checkpoint, b"ok\n\xc3\x28\n"),
        "in.txt:2: invalid UTF-8 at byte 0",
    ),
    Case(
        "a 1 MB line to translate is truncated with a warning",
        model_case(lambda tmp, checkpoint: checkpoint, b"alpha " * 170_000 + b"\n"),
        "warning: input of 170000 tokens truncated to 63 (model.max_positions)",
        status=0,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_gets_a_clear_error(case, tmp_path, capsys, recwarn):
    gets_a_clear_error(case, tmp_path, capsys, recwarn)


def test_a_1mb_line_is_reported_as_filtered(tmp_path, capsys):
    build = prepare_with_train_files(
        "alpha beta\n" + "gamma " * 170_000 + "\n", "A\nG\n"
    )
    assert main(build(tmp_path)) == 0
    assert "1 of 2 pairs kept (1 longer than 128 tokens)" in capsys.readouterr().out


def test_a_word_text_with_cr_only_line_ends_names_the_line(tmp_path):
    path = tmp_path / "text.txt"
    path.write_bytes(b"A\r\nB\nC\rD\r")
    assert read_text(path) == "A\r\nB\nC\rD\r"  # characters: as they are
    with pytest.raises(RosettaError, match=r"text\.txt:3: a carriage return"):
        read_text(path, lines_only=True)


# any text on one line: every Unicode character but the line breaks "\n" and "\r"
# (and lone surrogates, which UTF-8 cannot hold)
ONE_LINE = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"),
    max_size=40,
)


SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@SETTINGS
@given(lines=st.lists(ONE_LINE, max_size=12), gz=st.booleans(), crlf=st.booleans())
def test_reader_returns_exactly_the_lines_written(tmp_path, lines, gz, crlf):
    import gzip

    end = "\r\n" if crlf else "\n"
    data = "".join(line + end for line in lines).encode("utf-8")
    path = tmp_path / ("corpus.gz" if gz else "corpus.txt")
    path.write_bytes(gzip.compress(data) if gz else data)
    assert [text for _, text in read_lines(path)] == lines


@pytest.fixture(scope="module")
def sentencepiece():
    text = [" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))] * 20
    config = TokenizerConfig(vocab_size=40, model_type="unigram")
    return SentencePieceTokenizer.train(text, config)


@SETTINGS
@given(words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=15))
def test_sentencepiece_round_trip_on_known_text(sentencepiece, words):
    text = " ".join(words)
    assert sentencepiece.decode(sentencepiece.encode(text)) == text


@SETTINGS
@given(text=ONE_LINE)
def test_sentencepiece_never_fails_on_any_text(sentencepiece, text):
    ids = sentencepiece.encode(text)
    assert all(0 <= i < len(sentencepiece) for i in ids)
    assert "\n" not in sentencepiece.decode(ids)


@pytest.fixture(scope="module")
def toy_model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("toy")
    config, _ = toy_config(
        folder, "train.max_epochs=null", "train.max_steps=20", "train.validate_every=20"
    )
    run_training(config, folder / "run")
    return folder / "run"


@SETTINGS
@given(lines=st.lists(ONE_LINE, max_size=10))
def test_translator_gives_one_single_line_output_per_input(toy_model, lines):
    outputs = load_translator(toy_model, device="cpu").translate(lines, batch_size=3)
    assert len(outputs) == len(lines)
    for line, output in zip(lines, outputs, strict=True):
        assert "\n" not in output and "\r" not in output
        if not line.strip():
            assert output == ""


@settings(max_examples=15, deadline=None)
@given(lines=st.lists(ONE_LINE, max_size=8))
def test_cli_translate_keeps_stdin_lines_aligned(toy_model, lines):
    stdin = io.TextIOWrapper(io.BytesIO("".join(x + "\n" for x in lines).encode()))
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    saved = sys.stdin, sys.stdout
    sys.stdin, sys.stdout = stdin, stdout
    try:
        status = main(["translate", "-m", str(toy_model), "--device", "cpu"])
    finally:
        sys.stdin, sys.stdout = saved
    assert status == 0
    stdout.flush()
    written = stdout.buffer.getvalue().decode("utf-8")
    assert written.count("\n") == len(lines)
