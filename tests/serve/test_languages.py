"""Languages per request: a multilingual model (a tiny NLLB-200 made
offline, ``benchmarks/multilingual_model.py``) served once translates each
request from and into the languages it names, requests of several target
languages sharing one model call."""

from __future__ import annotations

import threading

import pytest
from fastapi.testclient import TestClient

from rosetta.jobs.loading import load_translator
from rosetta.serve.app import create_app
from rosetta.serve.settings import ServerSettings

TARGETS = ["eng_Latn", "fra_Latn", "spa_Latn"]


@pytest.fixture(scope="module")
def nllb(tmp_path_factory):
    pytest.importorskip("transformers")
    from benchmarks.multilingual_model import make_multilingual

    from rosetta.families import all_importers
    from rosetta.jobs.importers import import_run

    folder = tmp_path_factory.mktemp("nllb")
    hf = next(importer for importer in all_importers() if importer.name == "hf")
    made = make_multilingual("nllb", folder / "model", seed=2)
    import_run(hf, str(made), folder / "run", log=lambda *_: None)
    return load_translator(folder / "run", "cpu")


def client(translator, **settings) -> TestClient:
    return TestClient(create_app(translator, ServerSettings(**settings)))


def test_requests_into_three_languages_share_one_call(nllb):
    sentence = "Zwei Hunde spielen im Schnee."
    expected = {
        code: nllb.from_language("deu_Latn").for_language(code).translate([sentence])[0]
        for code in TARGETS
    }
    assert len(set(expected.values())) == 3  # each language its own output
    answers: dict[str, str] = {}
    with client(nllb, max_wait_ms=1000) as served:

        def ask(code: str) -> None:
            request = {
                "sentences": [sentence],
                "source_lang": "deu_Latn",
                "target_lang": code,
                "beam_size": 1,
            }
            response = served.post("/translate", json=request)
            assert response.status_code == 200, response.text
            translation = response.json()["translations"][0]["hypotheses"][0]
            answers[code] = translation["text"]

        threads = [threading.Thread(target=ask, args=(code,)) for code in TARGETS]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        batching = served.get("/info").json()["batching"]
    assert answers == expected
    assert (batching["requests"], batching["model_calls"]) == (3, 1), batching


def test_a_language_left_out_or_unknown_is_a_422_naming_the_codes(nllb):
    with client(nllb) as served:
        response = served.post("/translate", json={"sentences": ["Ein Hund."]})
        assert response.status_code == 422
        assert "choose the source language with source_lang" in response.text
        wrong = {"sentences": ["Ein Hund."], "source_lang": "deu_Latn"}
        wrong["target_lang"] = "klingon"
        response = served.post("/translate", json=wrong)
        assert response.status_code == 422
        assert "target language 'klingon' is not one of the model's" in response.text
        assert (
            served.post("/translate", json={**wrong, "target_lang": 7}).status_code
            == 422
        )


def test_the_info_lists_the_languages_and_the_server_s_defaults(nllb):
    chosen = nllb.from_language("deu_Latn").for_language("fra_Latn")
    with client(chosen) as served:
        languages = served.get("/info").json()["languages"]
        response = served.post("/translate", json={"sentences": ["Ein Hund."]})
    assert (
        len(languages["target"]) == 202 and languages["source"] == languages["target"]
    )
    assert (languages["source_default"], languages["target_default"]) == (
        "deu_Latn",
        "fra_Latn",
    )
    assert response.status_code == 200
    text = response.json()["translations"][0]["hypotheses"][0]["text"]
    assert text == chosen.translate(["Ein Hund."])[0]


def test_each_request_is_checked_against_its_own_source_language(nllb):
    """NLLB-200's codes reach the language check: German declared French is
    flagged, German declared German is not."""
    german = "Zwei Hunde spielen zusammen im tiefen Schnee des Waldes."
    with client(nllb) as served:
        found = {}
        for source in ("fra_Latn", "deu_Latn"):
            request = {
                "sentences": [german],
                "source_lang": source,
                "target_lang": "eng_Latn",
                "beam_size": 1,
            }
            response = served.post("/translate", json=request)
            assert response.status_code == 200, response.text
            found[source] = response.json()["translations"][0]["detected_language"]
    assert found == {"fra_Latn": "de", "deu_Latn": None}


def test_the_page_names_the_languages_and_a_request_may_type_them(nllb):
    """/info (the page's header) names the languages, not "src → tgt"; a
    request may name a language as people write it."""
    codes = len(nllb.target_languages)
    with client(nllb) as served:
        info = served.get("/info").json()
        assert (info["src_label"], info["tgt_label"]) == (
            f"any of {codes} languages",
            f"any of {codes} languages",
        )
        typed = {"sentences": ["Ein Hund."], "source_lang": "de", "target_lang": "fr"}
        response = served.post("/translate", json=typed)
        assert response.status_code == 200, response.text
        coded = {**typed, "source_lang": "deu_Latn", "target_lang": "fra_Latn"}
        assert (
            served.post("/translate", json=coded).json()["translations"]
            == (response.json()["translations"])
        )
    chosen = nllb.from_language("German").for_language("fra_Latn")
    with client(chosen) as served:
        info = served.get("/info").json()
        assert (info["src_label"], info["tgt_label"]) == (
            "German (deu_Latn)",
            "French (fra_Latn)",
        )
