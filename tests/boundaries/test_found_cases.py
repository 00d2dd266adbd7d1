"""Cases an adversarial set found, one rule each: an ensemble weight too
large or too small to compute with, scoring through an engine that cannot,
empty files to score, a broken pipe, an output limit of no tokens, a
byte-order mark, a string for a boolean, and the placeholder languages of
a run that names none."""

from __future__ import annotations

import io
import os
import sys

import pytest
from fastapi.testclient import TestClient

from rosetta.cli import main
from rosetta.data.corpus import read_lines
from rosetta.errors import RosettaError
from rosetta.inference.ensemble import ensemble_weights
from rosetta.jobs.loading import load, load_translator
from rosetta.search.options import SearchOptions
from rosetta.serve.app import create_app


@pytest.mark.parametrize(
    "weights", [[1e308, 1e308], [1e308, 1.0], [1e-300, 1.0], [1e-7, 1.0]]
)
def test_ensemble_weights_beyond_what_float32_holds_are_refused(weights):
    if weights[0] == weights[1]:
        assert ensemble_weights(weights, 2) == [0.5, 0.5]  # scaled first
        return
    with pytest.raises(RosettaError, match="changes nothing; leave it out"):
        ensemble_weights(weights, 2)


def test_large_equal_weights_translate_as_equal_ones(toy_run):
    run = toy_run("transformer")
    big = load([run, run], "cpu", weights=[1e308, 1e308])
    assert big.translate(["alpha beta"]) == load([run], "cpu").translate(["alpha beta"])


def test_scoring_through_ctranslate2_is_refused(toy_run, tmp_path):
    pytest.importorskip("ctranslate2")
    from rosetta.inference.pair_scoring import score_pairs

    export = tmp_path / "ct2"
    assert (
        main(
            [
                "export",
                "ctranslate2",
                "-m",
                str(toy_run("transformer")),
                "-o",
                str(export),
            ]
        )
        == 0
    )
    translator = load_translator(export, "cpu", engine="ctranslate2")
    with pytest.raises(RosettaError, match="decodes token by token"):
        score_pairs(translator, ["alpha"], ["ALPHA"])


def test_empty_files_to_score_are_one_line(tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert main(["evaluate", "--hyp", str(empty), "--ref", str(empty)]) == 2
    err = capsys.readouterr().err
    assert "no lines to score" in err and err.count("\n") == 1, err


def test_a_reader_gone_is_no_traceback(toy_run, monkeypatch):
    class Gone(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def fileno(self):
            return saved

    saved = os.dup(sys.__stdout__.fileno())
    monkeypatch.setattr(sys, "stdout", Gone())
    try:
        assert main(["languages", "-m", str(toy_run("transformer"))]) == 141
    finally:
        os.close(saved)


def test_an_output_limit_of_no_tokens_is_refused():
    with pytest.raises(ValueError, match="leaves no room for a translation"):
        SearchOptions(max_len_a=0, max_len_b=0)
    SearchOptions(max_len_a=0, max_len_b=1)  # one token: <eos> at least


def test_a_byte_order_mark_is_the_files_not_the_texts(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes("\ufeffEin Hund.\n\ufeffzwei\n".encode())
    assert [text for _, text in read_lines(path)] == ["Ein Hund.", "\ufeffzwei"]


def test_the_server_takes_booleans_as_booleans(toy_run):
    translator = load_translator(toy_run("transformer"), "cpu")
    with TestClient(create_app(translator)) as client:
        for field in ("alignment", "attention", "sample", "refill", "ban_forms"):
            body = {"sentences": ["alpha"], field: "yes"}
            response = client.post("/translate", json=body)
            assert response.status_code == 422, (field, response.text)
            assert field in response.text


def test_a_run_naming_no_languages_lists_no_placeholder(toy_run, capsys):
    assert main(["languages", "-m", str(toy_run("transformer"))]) == 0
    out = capsys.readouterr().out
    assert "src" not in out.split() and "tgt" not in out.split(), out
    assert "names no languages" in out
