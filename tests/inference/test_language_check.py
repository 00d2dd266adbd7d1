"""The source-language check (``rosetta.inference.language_check``): lines
in another language than the model's source are said, on stderr, in
``--format jsonl`` and in the server's answer; the translation never
changes."""

from __future__ import annotations

import gzip
import json
import time

import pytest
from fastapi.testclient import TestClient

from rosetta.cli import main
from rosetta.inference.language_check import LanguageCheck, language_code
from rosetta.jobs.loading import load_translator
from rosetta.serve.app import create_app
from rosetta.serve.settings import ServerSettings
from tests.support.paths import ROOT

DATA = ROOT / "data" / "multi30k"
GERMAN = "Zwei Hunde spielen zusammen im tiefen Schnee."
ENGLISH = "A woman is sitting on a bench in the park."


def multi30k_test(language: str) -> list[str]:
    with gzip.open(DATA / f"test_2016_flickr.{language}.gz", "rt") as handle:
        return [line.rstrip("\n") for line in handle]


def test_german_lines_pass_and_english_ones_are_flagged_quickly():
    """Multi30k test_2016: at least 99% of the German lines pass a check
    for German, at least 99% of the English ones are flagged, in at most
    5 ms a line."""
    check = LanguageCheck()
    assert check.expect("de")
    german, english = multi30k_test("de"), multi30k_test("en")
    began = time.perf_counter()
    flagged_german = sum(bool(x) for x in check.detected(german))
    seconds = time.perf_counter() - began
    flagged_english = check.detected(english)
    assert flagged_german <= 0.01 * len(german)
    assert sum(x == "en" for x in flagged_english) >= 0.99 * len(english)
    assert seconds / len(german) <= 0.005


def test_short_lines_unknown_languages_and_a_disabled_check_say_nothing():
    check = LanguageCheck()
    assert check.expect("de_DE") and check.language == "de"
    assert check.detected(["Hello.", "OK", ""]) == [None, None, None]
    assert not check.expect("src")  # a run that names no language
    assert check.detected([ENGLISH]) == [None]
    off = LanguageCheck(enabled=False)
    assert not off.expect("de") and off.detected([ENGLISH]) == [None]
    assert language_code(None) is None


def test_three_letter_codes_are_checked_as_the_identifier_knows_them():
    """NLLB-200's ``fra_Latn``, ISO 639-3's ``deu``: checked, never silently
    off. Every three-letter code in the table is a language the identifier
    knows; one it does not is said once."""
    from rosetta.inference.language_codes import TWO_LETTERS

    check = LanguageCheck()
    assert check.expect("fra_Latn") and check.language == "fr"
    assert check.detected([GERMAN]) == ["de"]
    assert check.off_note() is None
    assert language_code("deu") == language_code("deu_Latn") == "de"
    assert language_code("arb_Arab") == "ar" and language_code("zho_Hans") == "zh"
    known = set(check._identifier.nb_classes)
    assert set(TWO_LETTERS.values()) <= known
    assert not check.expect("tpi_Latn")  # Tok Pisin: the identifier has none
    assert "'tpi_Latn'" in check.off_note()
    assert not check.expect("src") and check.off_note() is None  # none named


@pytest.fixture(scope="module")
def german_run(tmp_path_factory):
    """A toy run whose source language is German."""
    from rosetta.jobs.training import run_training
    from tests.support.toy import TOY_MODELS, toy_config

    folder = tmp_path_factory.mktemp("german")
    config, _ = toy_config(
        folder,
        "train.max_epochs=null",
        "train.max_steps=10",
        "train.validate_every=10",
        "data.src_lang=de",
        model=TOY_MODELS["transformer"],
    )
    run_training(config, folder / "run")
    return folder / "run"


def test_translate_says_which_lines_look_like_another_language(
    german_run, tmp_path, capsys
):
    source = tmp_path / "in.txt"
    source.write_text(f"{GERMAN}\n{ENGLISH}\n", encoding="utf-8")
    command = ["translate", "-m", str(german_run), "-i", str(source)]
    capsys.readouterr()
    assert main([*command, "--format", "jsonl"]) == 0
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines()]
    assert "detected_language" not in lines[0]
    assert lines[1]["detected_language"] == "en"
    assert "1 of 2 lines look like another language than de" in err
    assert "first: line 2" in err
    assert main(command) == 0
    checked = capsys.readouterr().out
    assert main([*command, "--no-language-check"]) == 0
    unchecked, err = capsys.readouterr()
    assert checked == unchecked  # the translation never changes
    assert "look like another language" not in err


def test_the_server_says_it_per_sentence(german_run):
    translator = load_translator(german_run, "cpu")
    body = {"sentences": [GERMAN, ENGLISH]}
    with TestClient(create_app(translator)) as client:
        found = client.post("/translate", json=body).json()["translations"]
    assert [t["detected_language"] for t in found] == [None, "en"]
    off = ServerSettings(language_check=False)
    with TestClient(create_app(translator, off)) as client:
        unchecked = client.post("/translate", json=body).json()["translations"]
    assert [t["detected_language"] for t in unchecked] == [None, None]
    assert [t["hypotheses"] for t in unchecked] == [t["hypotheses"] for t in found]
