"""What the server refuses before any request reaches the model, as the
command line does: a multilingual model without a target language, banned
phrases that are not text; and bans in every spelling of a SentencePiece
vocabulary (a MarianMT import), on the server, the command line and in
Python."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from rosetta.cli import main
from rosetta.jobs.loading import load_translator
from rosetta.search.options import MAX_BANNED, MAX_PHRASE_CHARS, SearchOptions
from rosetta.serve.app import create_app


def quiet(*_: object) -> None:
    pass


def imported(folder: Path, languages: tuple[str, ...] = ()) -> Path:
    """A tiny MarianMT model made offline, imported as a run."""
    pytest.importorskip("transformers")
    from benchmarks.marian_model import make_marian

    from rosetta.families import all_importers
    from rosetta.jobs.importers import import_run

    hf = next(importer for importer in all_importers() if importer.name == "hf")
    marian = make_marian(folder / "opus-mt", languages=languages, seed=1)
    import_run(hf, str(marian), folder / "run", log=quiet)
    return folder / "run"


def test_a_multilingual_model_is_told_its_target_language_per_request(tmp_path):
    """Served without --target-lang, a request that names none is a 422
    naming the codes; one that names one is translated into it."""
    from fastapi.testclient import TestClient

    run = imported(tmp_path, languages=("fra", "spa"))
    translator = load_translator(run, "cpu")
    with TestClient(create_app(translator)) as client:
        response = client.post("/translate", json={"sentences": ["Ein Hund."]})
        assert response.status_code == 422
        assert (
            "choose the target language with target_lang: one of its 2 codes (fra, spa;"
            in response.text
        )
        asked = {"sentences": ["Ein Hund."], "target_lang": "spa"}
        response = client.post("/translate", json=asked)
        assert response.status_code == 200
        text = response.json()["translations"][0]["hypotheses"][0]["text"]
        assert text == translator.for_language("spa").translate(["Ein Hund."])[0]
        languages = client.get("/info").json()["languages"]
        assert (languages["target"], languages["source"]) == (["fra", "spa"], [])


def test_a_ban_holds_in_every_spelling_of_a_sentencepiece_vocabulary(tmp_path, capsys):
    """The model writes a word one way; banned as those tokens alone, it
    writes it another way ("▁" then the letters, or without "▁" at the
    start); banned as text, in none."""
    run = imported(tmp_path)
    from benchmarks.marian_model import sentences

    translator = load_translator(run, "cpu")
    texts = sentences("de", 40, "val")
    free = translator.translate(texts)
    words = sorted({w for line in free for w in line.split()})

    def holding(outputs: list[str], word: str) -> int:
        return sum(word in line.split() for line in outputs)

    def one_spelling(word: str) -> SearchOptions:
        return SearchOptions(banned=(translator.tokenizers.tgt.encode(word),))

    word = next(
        w for w in words if holding(translator.translate(texts, one_spelling(w)), w)
    )
    assert holding(free, word)
    assert not holding(translator.translate(texts, SearchOptions(ban=(word,))), word)
    with TestClient(create_app(translator)) as client:
        answer = client.post("/translate", json={"sentences": texts, "ban": [word]})
        assert answer.status_code == 200, answer.text
        served = [r["hypotheses"][0]["text"] for r in answer.json()["translations"]]
        assert not holding(served, word)
    source = tmp_path / "in.de"
    source.write_text("".join(text + "\n" for text in texts))
    assert main(["translate", "-m", str(run), "-i", str(source), "--ban", word]) == 0
    assert not holding(capsys.readouterr().out.splitlines(), word)


BAD_PHRASES = {
    "a lone surrogate": (["\ud800"], "lone surrogate at character 0"),
    "an empty phrase": ([""], "a banned phrase is empty"),
    "a blank phrase": (["  "], "a banned phrase is empty"),
    "a long phrase": (["x" * (MAX_PHRASE_CHARS + 1)], f"at most {MAX_PHRASE_CHARS}"),
}


@pytest.mark.parametrize("bad", BAD_PHRASES, ids=list(BAD_PHRASES))
def test_banned_phrases_that_are_not_text_are_refused_everywhere(
    toy_run, tmp_path, capsys, bad
):
    phrases, message = BAD_PHRASES[bad]
    with pytest.raises(ValueError, match=message):
        SearchOptions(ban=tuple(phrases))
    run = toy_run("transformer")
    source = tmp_path / "in.txt"
    source.write_text("alpha beta\n")
    capsys.readouterr()  # what training the toy model said
    command = ["translate", "-m", str(run), "-i", str(source), "--ban", *phrases]
    assert main(command) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("rosetta translate: error: ") and message in error
    # raw JSON: a client's encoder may refuse the lone surrogate itself
    body = json.dumps({"sentences": ["alpha"], "ban": phrases})
    headers = {"content-type": "application/json"}
    with TestClient(create_app(load_translator(run, "cpu"))) as client:
        answer = client.post("/translate", content=body, headers=headers)
        assert answer.status_code == 422, answer.text
        [detail] = answer.json()["detail"]
        assert detail["loc"][:2] == ["body", "ban"] and message in detail["msg"]


def test_too_many_phrases_or_one_string_are_refused():
    with pytest.raises(ValueError, match=f"at most {MAX_BANNED}"):
        SearchOptions(ban=("dog",) * (MAX_BANNED + 1))
    with pytest.raises(ValueError, match="a list of phrases, not one string"):
        SearchOptions(ban="dog")  # type: ignore[arg-type]
    assert SearchOptions(ban=["dog"]).ban == ("dog",)  # type: ignore[arg-type]


def test_request_fields_take_the_command_line_names_and_suggest_the_closest(
    toy_run,
):
    """``beam`` and ``min_len`` as ``rosetta translate`` spells them (the API's
    ``beam_size`` and ``min_length`` too); a field the server does not know
    is refused with the closest one it does."""
    run = toy_run("transformer")
    with TestClient(create_app(load_translator(run, "cpu"))) as client:
        cli_names = {"sentences": ["alpha beta"], "beam": 3, "min_len": 2}
        api_names = {"sentences": ["alpha beta"], "beam_size": 3, "min_length": 2}
        answers = [
            client.post("/translate", json=body) for body in (cli_names, api_names)
        ]
        assert [a.status_code for a in answers] == [200, 200], answers[0].text
        assert answers[0].json()["translations"] == answers[1].json()["translations"]
        typo = client.post("/translate", json={"sentences": ["a"], "min_lenght": 2})
        assert typo.status_code == 422
        [detail] = typo.json()["detail"]
        assert detail["loc"] == ["body", "min_lenght"]
        assert "did you mean 'min_length'?" in detail["msg"]
        both = {"sentences": ["a"], "min_len": 2, "min_length": 3, "beam": 2}
        both["beam_size"] = 2
        twice = client.post("/translate", json=both)
        assert twice.status_code == 422
        said = sorted(detail["msg"] for detail in twice.json()["detail"])
        assert said == [
            "'beam' and 'beam_size' name one setting: send one",
            "'min_len' and 'min_length' name one setting: send one",
        ]
