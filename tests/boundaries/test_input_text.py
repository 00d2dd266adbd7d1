"""Property-based tests: the reader, tokenizer round trips, line alignment."""

from __future__ import annotations

import io
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rosetta.cli import main
from rosetta.config.sections import TokenizerConfig
from rosetta.data.corpus import read_lines
from rosetta.data.tokenizer import SentencePieceTokenizer
from rosetta.jobs.loading import load_translator
from rosetta.jobs.training import run_training
from tests.support.toy import WORDS, toy_config

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
