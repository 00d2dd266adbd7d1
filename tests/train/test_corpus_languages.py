"""A run knows its corpus's languages without being told: ``prepare``
identifies both sides from a sample, says them in one line, warns once where
the configuration says otherwise, and keeps them in ``corpus_languages.json``,
which the source-language check of ``translate`` and the server falls back
on where ``data.src_lang`` names no language. A run without the file checks
nothing, as before."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest
from fastapi.testclient import TestClient

from rosetta.errors import RosettaError
from rosetta.jobs.loading import load_translator
from rosetta.jobs.training import check_new_run_folder, run_training
from rosetta.runs.corpus_languages import LANGUAGES_FILE, read_corpus_languages
from rosetta.serve.app import create_app
from rosetta.train import corpus_census
from rosetta.train.prepare import PrepareOptions, prepare_data
from tests.support.paths import ROOT
from tests.support.toy import toy_config

MULTI30K = ROOT / "data" / "multi30k"
GERMAN = "Zwei Hunde spielen zusammen im tiefen Schnee."
ENGLISH = "A woman is sitting on a bench in the park."


def german_english(folder, *overrides, pairs=400):
    """A toy configuration over the first ``pairs`` pairs of Multi30k's
    German→English training set (Elliott et al. 2016)."""
    for side in ("de", "en"):
        with gzip.open(MULTI30K / f"train.{side}.gz", "rt") as handle:
            lines = [next(handle) for _ in range(pairs)]
        (folder / f"train.{side}").write_text("".join(lines), encoding="utf-8")
    config, _ = toy_config(
        folder,
        f"data.train.src={folder / 'train.de'}",
        f"data.train.tgt={folder / 'train.en'}",
        *overrides,
    )
    return config


def prepared(folder, *overrides):
    """What prepare says of the German→English corpus, and the run."""
    said: list[str] = []
    prepare_data(german_english(folder, *overrides), folder / "run", said.append)
    return said, folder / "run"


def test_prepare_records_german_and_english(tmp_path):
    said, run = prepared(tmp_path)
    found = read_corpus_languages(run)
    assert found is not None and found.lines == 300
    assert (found.source.language, found.target.language) == ("de", "en")
    assert found.source.share >= 0.95 and found.target.share >= 0.95
    summary = [line for line in said if line.startswith("corpus languages:")]
    assert summary == [found.summary()]
    assert summary[0].startswith("corpus languages: source de (")
    assert "of 300 lines), target en (" in summary[0]
    assert not any(line.startswith("warning:") for line in said)
    check_new_run_folder(run)  # the file is a run's own: training may start here


def test_a_contradicting_source_language_is_one_warning(tmp_path):
    said, _ = prepared(tmp_path, "data.src_lang=en", "data.tgt_lang=en_US")
    warnings = [line for line in said if line.startswith("warning:")]
    assert len(warnings) == 1, said
    assert "data.src_lang is en but the corpus's source looks like de" in warnings[0]
    assert "tgt_lang" not in warnings[0]  # en_US is English: no contradiction


@pytest.mark.parametrize("stated", ["deu", "de_DE", "tpi"])
def test_agreeing_or_unknown_languages_warn_nothing(tmp_path, stated):
    """German in other spellings agrees; Tok Pisin, which the identifier
    cannot tell, is never contradicted."""
    said, _ = prepared(tmp_path, f"data.src_lang={stated}")
    assert not any(line.startswith("warning:") for line in said), said


def test_a_corpus_of_no_clear_language_records_none(tmp_path):
    said: list[str] = []
    config, _ = toy_config(tmp_path)  # Greek letters' names, in Latin script
    prepare_data(config, tmp_path / "run", said.append)
    found = read_corpus_languages(tmp_path / "run")
    assert found is not None and found.source.language is None
    assert found.source.likeliest is not None and found.source.share < 0.8
    assert any(line.startswith("corpus languages: source unclear (") for line in said)


def test_the_record_is_read_back_and_made_again_with_the_corpus(tmp_path, monkeypatch):
    """Training after prepare reads the record; a corpus encoded again is
    identified again; a damaged record is made again."""
    _, run = prepared(tmp_path)
    config = german_english(tmp_path)

    def never(*_):
        raise AssertionError("identified again")

    with monkeypatch.context() as patched:
        patched.setattr(corpus_census, "identify", never)
        prepare_data(config, run, lambda _: None)
    (run / LANGUAGES_FILE).write_text("{", encoding="utf-8")
    with pytest.raises(RosettaError, match=LANGUAGES_FILE):
        read_corpus_languages(run)
    prepare_data(config, run, lambda _: None)
    assert read_corpus_languages(run).source.language == "de"
    # the corpus's sides swapped: encoded again with refresh, identified again
    swapped = german_english(
        tmp_path,
        f"data.train.src={tmp_path / 'train.en'}",
        f"data.train.tgt={tmp_path / 'train.de'}",
    )
    prepare_data(swapped, run, lambda _: None, PrepareOptions(refresh=True))
    found = read_corpus_languages(run)
    assert (found.source.language, found.target.language) == ("en", "de")


@pytest.fixture(scope="module")
def unnamed_german_run(tmp_path_factory):
    """A toy model trained on German→English pairs whose configuration
    names no language."""
    folder = tmp_path_factory.mktemp("unnamed")
    config = german_english(
        folder,
        "train.max_epochs=null",
        "train.max_steps=4",
        "train.validate_every=4",
        pairs=200,
    )
    assert config.data.src_lang == "src"
    run_training(config, folder / "run")
    return folder / "run"


def flagged_by_server(translator) -> list[str | None]:
    body = {"sentences": [GERMAN, ENGLISH]}
    with TestClient(create_app(translator)) as client:
        found = client.post("/translate", json=body).json()["translations"]
    return [t["detected_language"] for t in found]


def test_the_check_falls_back_on_the_recorded_language(unnamed_german_run):
    translator = load_translator(unnamed_german_run, "cpu")
    assert translator.corpus_languages.source.language == "de"
    assert translator.expected_source == "de"
    assert flagged_by_server(translator) == [None, "en"]
    config = translator.config
    stated = config.data.model_copy(update={"src_lang": "fr"})
    translator.config = config.model_copy(update={"data": stated})
    assert translator.expected_source == "fr"  # a stated language wins


def test_a_run_without_the_record_checks_nothing(unnamed_german_run, tmp_path):
    older = tmp_path / "older"
    shutil.copytree(unnamed_german_run, older)
    (older / LANGUAGES_FILE).unlink()
    translator = load_translator(older, "cpu")
    assert translator.corpus_languages is None
    assert translator.expected_source is None
    assert flagged_by_server(translator) == [None, None]
    assert len(translator.translate([GERMAN])) == 1  # translates as before


def test_a_damaged_record_is_one_line_at_loading(unnamed_german_run, tmp_path):
    damaged = tmp_path / "damaged"
    shutil.copytree(unnamed_german_run, damaged)
    record = json.loads((damaged / LANGUAGES_FILE).read_text())
    record["source"]["share"] = "most"
    (damaged / LANGUAGES_FILE).write_text(json.dumps(record))
    with pytest.raises(RosettaError, match=f"{LANGUAGES_FILE}: not a run's record"):
        load_translator(damaged, "cpu")
