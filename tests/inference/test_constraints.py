"""Constraints as text, where users give them: ``rosetta translate
--constraints FILE``, the server's ``constraints``, the Python API; and
every family honours or refuses every control and constraint."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from rosetta.cli import main
from rosetta.inference.constraints import Constraint
from rosetta.jobs.loading import load_translator
from rosetta.search.options import SearchOptions
from rosetta.serve.app import create_app

LINES = [
    "alpha beta gamma",
    "delta eps zeta",
    "kappa iota theta",
    "beta gamma delta eps",
    "zeta eta",
    "gamma alpha",
]
WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota"]


def translate(run, tmp_path, capsys, *flags: str, lines=LINES) -> tuple[int, str, str]:
    source = tmp_path / "in.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    capsys.readouterr()  # what came before (a toy model's training)
    status = main(["translate", "-m", str(run), "-i", str(source), *flags])
    out, err = capsys.readouterr()
    return status, out, err


def constraints_file(tmp_path, items) -> str:
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    return str(path)


def wanted_for(free: list[str]) -> list[dict]:
    """Per line: none, a word its free translation lacks, one it holds
    excluded, a prefix that is not its start, and mixes."""
    missing = [next(w for w in WORDS if w not in f.split()) for f in free]
    held = [f.split()[0] for f in free]
    return [
        {},
        {"include": [missing[1]]},
        {"exclude": [held[2]]},
        {"prefix": f"{missing[3]} {missing[3]}"},
        {"include": [missing[4]], "prefix": missing[4], "exclude": [held[4]]},
        {"include": [f"{missing[5]} {missing[5]}"]},
    ]


def test_the_command_meets_each_lines_constraints(toy_run, tmp_path, capsys):
    run = toy_run("transformer")
    _, out, _ = translate(run, tmp_path, capsys, "--beam", "4")
    free = out.splitlines()
    wanted = wanted_for(free)
    flags = ["--beam", "4", "--format", "jsonl"]
    flags += ["--constraints", constraints_file(tmp_path, wanted)]
    status, out, err = translate(run, tmp_path, capsys, *flags)
    assert status == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert len(records) == len(LINES)
    for record, want, plain in zip(records, wanted, free, strict=True):
        best = record["hypotheses"][0]
        text = " " + best["text"] + " "
        assert best["constraints_met"] is True, (want, best["text"])
        assert all(f" {p} " in text for p in want.get("include", []))
        assert not any(f" {p} " in text for p in want.get("exclude", []))
        assert best["text"].startswith(want.get("prefix", ""))
        if not want:
            assert best["text"] == plain
    assert "warning" not in err


@pytest.mark.parametrize(
    ("lines", "flags", "said"),
    [
        (['{"include": ["alpha"]}'], [], "c.jsonl: 1 lines of constraints for 6"),
        (["{}"] * 5 + ['{"include": "alpha"}'], ["--beam", "2"], "c.jsonl:6: include"),
        (["{}", "{not json"] + ["{}"] * 4, [], "c.jsonl:2: "),
        (["{}"] * 5 + ['{"prefx": "a"}'], [], "c.jsonl:6: unknown field 'prefx'"),
        (["[]"] + ["{}"] * 5, [], "c.jsonl:1: not a JSON object"),
        (['{"include": ["alpha"]}'] + ["{}"] * 5, [], "need beam search"),
        (
            ['{"exclude": [""]}'] + ["{}"] * 5,
            [],
            "c.jsonl:1: an exclude phrase is empty",
        ),
        (['{"prefix": 3}'] + ["{}"] * 5, [], "c.jsonl:1: prefix is not text"),
    ],
    ids=["count", "string", "json", "field", "array", "greedy", "blank", "number"],
)
def test_constraints_that_do_not_fit_are_one_line(
    toy_run, tmp_path, capsys, lines, flags, said
):
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = toy_run("transformer")
    status, out, err = translate(
        run, tmp_path, capsys, "--constraints", str(path), *flags
    )
    assert status == 2 and out == ""
    errors = [line for line in err.splitlines() if "error" in line]
    assert said in errors[-1] and len(errors) == 1, err


def test_the_python_api_validates_constraints_once(toy_run):
    translator = load_translator(toy_run("transformer"), device="cpu")
    with pytest.raises(ValueError, match="a list with one entry per sentence"):
        translator.translate(LINES[:1], constraints={"include": ["alpha"]})
    with pytest.raises(ValueError, match="include is a list of phrases, not 'alpha'"):
        translator.translate(LINES[:1], constraints=[{"include": "alpha"}])
    with pytest.raises(ValueError, match="include is a list of phrases"):
        Constraint(include="alpha")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="2 constraints for 1 sentences"):
        translator.translate(LINES[:1], constraints=[None, None])
    beam = SearchOptions(beam_size=3)
    [found] = translator.translate_nbest(
        LINES[:1], beam, constraints=[Constraint(include=("iota",))]
    )
    assert "iota" in found[0].text.split() and found[0].constraints_met


def test_the_server_takes_constraints_per_sentence(toy_run):
    translator = load_translator(toy_run("transformer"), device="cpu")
    free = translator.translate(LINES, SearchOptions(beam_size=3))
    wanted = wanted_for(free)
    with TestClient(create_app(translator)) as client:
        body = {"sentences": LINES, "beam_size": 3, "constraints": wanted}
        answer = client.post("/translate", json=body)
        assert answer.status_code == 200, answer.text
        for found, want in zip(answer.json()["translations"], wanted, strict=True):
            best = found["hypotheses"][0]
            assert best["constraints_met"] is True
            assert best["text"].startswith(want.get("prefix", ""))
        plain = client.post("/translate", json={"sentences": LINES[:1]}).json()
        assert plain["translations"][0]["hypotheses"][0]["constraints_met"] is None
        for body, field in [
            ({"sentences": LINES[:2], "constraints": [{}]}, "constraints"),
            (
                {"sentences": LINES[:1], "constraints": [{"include": ["a"]}]},
                "constraints",
            ),
            ({"sentences": LINES[:1], "constraints": [{"prefx": "a"}]}, "prefx"),
            (
                '{"sentences": ["a"], "constraints": [{"include": ["\\ud800"]}]}',
                "surro",
            ),
        ]:
            if isinstance(body, str):  # JSON that no Python string can encode
                refused = client.post(
                    "/translate",
                    content=body,
                    headers={"content-type": "application/json"},
                )
            else:
                refused = client.post("/translate", json=body)
            assert refused.status_code == 422, refused.text
            assert field in json.dumps(refused.json()["detail"])


CONTROLS = {
    "include": ["--constraints", '{"include": ["iota"]}'],
    "exclude": ["--constraints", '{"exclude": ["alpha"]}'],
    "prefix": ["--constraints", '{"prefix": "iota"}'],
    "min-len": ["--min-len", "3"],
    "no-repeat-ngram": ["--no-repeat-ngram", "1"],
    "ban": ["--ban", "alpha"],
}


@pytest.mark.parametrize("family", ["transformer", "rnn-attention", "nat"])
@pytest.mark.parametrize("control", list(CONTROLS))
def test_every_family_honours_or_refuses_every_control(
    toy_run, tmp_path, capsys, family, control
):
    """An autoregressive family honours each control and constraint; the
    one-pass family refuses each in one line, never ignores it."""
    flag, value = CONTROLS[control]
    if flag == "--constraints":
        path = tmp_path / "c.jsonl"
        path.write_text(value + "\n", encoding="utf-8")
        value = str(path)
    run = toy_run(family)
    beam = [] if family == "nat" else ["--beam", "3"]
    status, out, err = translate(
        run, tmp_path, capsys, flag, value, *beam, "--format", "jsonl", lines=LINES[:1]
    )
    if family == "nat":
        assert status == 2 and out == "", err
        errors = [line for line in err.splitlines() if "error" in line]
        assert len(errors) == 1 and "NAT" in errors[0], err
        return
    assert status == 0, err
    best = json.loads(out)["hypotheses"][0]
    words = best["text"].split()
    held = {
        "include": "iota" in words and best.get("constraints_met"),
        "exclude": "alpha" not in words and best.get("constraints_met"),
        "prefix": best["text"].startswith("iota") and best.get("constraints_met"),
        "min-len": len(best["token_ids"]) >= 3,
        "no-repeat-ngram": len(set(best["token_ids"])) == len(best["token_ids"]),
        "ban": "alpha" not in words,
    }[control]
    assert held, best


@pytest.mark.reference
@pytest.mark.parametrize(
    "family", ["transformer", "transformer-relative", "rnn-attention"]
)
@pytest.mark.parametrize("beam", [1, 3])
def test_a_prefix_fed_in_one_pass_decodes_as_forcing_it_step_by_step(
    toy_run, monkeypatch, family, beam
):
    """The common prefix of a batch goes through the model in one call;
    the translations and scores are those of forcing it token by token."""
    import rosetta.search.beam
    import rosetta.search.greedy

    translator = load_translator(toy_run(family), device="cpu")
    free = translator.translate(LINES)
    wanted = [{"prefix": " ".join(text.split()[:2] or ["iota"])} for text in free]
    wanted[1] = {"prefix": "iota eta gamma", "include": ["beta"] if beam > 1 else []}
    options = SearchOptions(beam_size=beam, nbest=beam)
    fed = []
    module = rosetta.search.beam if beam > 1 else rosetta.search.greedy
    feed = module.feed_prefix
    monkeypatch.setattr(
        module, "feed_prefix", lambda *a: fed.append(feed(*a)) or fed[-1]
    )
    one_pass = translator.translate_nbest(LINES, options, constraints=wanted)
    assert fed and all(f is not None and f.length >= 1 for f in fed)
    for module in (rosetta.search.beam, rosetta.search.greedy):
        monkeypatch.setattr(module, "feed_prefix", lambda *args: None)
    stepwise = translator.translate_nbest(LINES, options, constraints=wanted)
    for fast, slow in zip(one_pass, stepwise, strict=True):
        assert [t.token_ids for t in fast] == [t.token_ids for t in slow]
        for a, b in zip(fast, slow, strict=True):
            assert a.score == pytest.approx(b.score, abs=1e-5)
            assert a.constraints_met and b.constraints_met


@pytest.mark.parametrize(
    ("constraint", "beam", "said"),
    [
        ({"include": ["alpha beta gamma delta"] * 90}, "2", "positions allow"),
        ({"include": ["alpha", "\u2603"]}, "2", "cannot write"),
        ({"prefix": "\u2603 alpha"}, "1", "cannot write"),
        ({"include": ["beta"] * 101}, "2", "at most 100"),
        ({"include": ["x" * 201]}, "2", "at most 200"),
    ],
    ids=["beyond-positions", "unknown-include", "unknown-prefix", "many", "long"],
)
def test_constraints_no_search_can_meet_are_one_line(
    toy_run, tmp_path, capsys, constraint, beam, said
):
    path = constraints_file(tmp_path, [constraint])
    status, out, err = translate(
        toy_run("transformer"),
        tmp_path,
        capsys,
        "--constraints",
        path,
        "--beam",
        beam,
        lines=LINES[:1],
    )
    errors = [line for line in err.splitlines() if "error" in line]
    assert status == 2 and out == "" and len(errors) == 1 and said in errors[0], err


def test_more_phrases_than_a_beam_can_carry_give_a_result_that_says_so(
    toy_run, tmp_path, capsys
):
    """Eight phrases, a beam of 2 and a short limit: a translation marked
    with whether it meets them, never a traceback."""
    wanted = {"include": WORDS[:8]}
    path = constraints_file(tmp_path, [wanted])
    status, out, err = translate(
        toy_run("transformer"),
        tmp_path,
        capsys,
        "--constraints",
        path,
        "--beam",
        "2",
        "--format",
        "jsonl",
        lines=LINES[:1],
    )
    assert status == 0, err
    best = json.loads(out)["hypotheses"][0]
    words = best["text"].split()
    assert best["constraints_met"] == all(w in words for w in WORDS[:8])
    assert best["constraints_met"] or "do not meet their constraints" in err


def test_an_imported_model_takes_constraints_and_aligns_the_users_words(tmp_path):
    """A MarianMT import (SentencePiece, a >>lang<< token before the
    source): constraints met, and alignments over the words the user gave."""
    from benchmarks.marian_model import sentences

    from tests.serve.test_checks import imported

    translator = load_translator(
        imported(tmp_path, languages=("fra", "spa")), "cpu"
    ).for_language("fra")
    texts = sentences("de", 6, "val")
    beam = SearchOptions(beam_size=4)
    wanted = [{"include": ["dog"], "exclude": ["guitar"], "prefix": "A man"}] * 6
    found = translator.translate_nbest(texts, beam, constraints=wanted, alignment=True)
    for text, want, [best, *_] in zip(texts, wanted, found, strict=True):
        assert best.constraints_met, (want, best.text)
        assert best.text.startswith(want["prefix"])
        assert "dog" in best.text.split() and "guitar" not in best.text
        for link in best.alignment.split():
            i, j = map(int, link.split("-"))
            assert 0 <= i < len(text.split()) and 0 <= j < len(best.text.split())


def test_a_prefix_ending_with_a_space_is_followed_by_a_new_word(tmp_path):
    """SentencePiece drops the space that ends "A "; the search then starts a
    new word after the prefix, and constraints_met reads the text."""
    from benchmarks.marian_model import sentences

    from tests.serve.test_checks import imported

    translator = load_translator(imported(tmp_path), "cpu")
    texts = sentences("de", 6, "val")
    for prefix in ("A ", "A  ", " A", "ﬁ "):  # a ligature, normalised to "fi"
        found = translator.translate_nbest(texts, constraints=[{"prefix": prefix}] * 6)
        for [best] in found:
            written = "fi" if prefix.startswith("ﬁ") else "A"
            kept = best.text == written or best.text.startswith(written + " ")
            if prefix.endswith(" "):
                assert kept, (prefix, best.text)
            assert best.constraints_met is (kept or not prefix.endswith(" ")), best


def test_what_the_command_says_of_constraints_is_true(toy_run, tmp_path, capsys):
    run = toy_run("transformer")
    lines = ["alpha beta", "", "gamma"]
    path = constraints_file(tmp_path, [{}, {"prefix": "iota"}, {"include": []}])
    status, _, err = translate(
        run, tmp_path, capsys, "--constraints", path, lines=lines
    )
    assert status == 0 and "do not meet" not in err  # nothing asked of lines 1, 3
    assert "the constraints of 1 blank lines are not used (line 2)" in err
    status, _, err = translate(run, tmp_path, capsys, "--constraints", "", lines=lines)
    assert status == 2 and "--constraints needs a file name" in err
    status, _, err = translate(
        run, tmp_path, capsys, "--constraints", "/dev/zero", lines=lines
    )
    assert status == 2 and "not a file of constraints" in err
    status, _, err = translate(
        run, tmp_path, capsys, "--alignment", "--sample", lines=lines
    )
    assert status == 2 and "not of sampling" in err
    unwritable = constraints_file(tmp_path, [{}, {}, {"include": ["\u2603"]}])
    status, _, err = translate(
        run, tmp_path, capsys, "--constraints", unwritable, "--beam", "2", lines=lines
    )
    assert status == 2 and f"{unwritable}:3: include phrase" in err


def test_phrases_written_letter_by_letter_are_met_by_a_narrow_beam(tmp_path):
    """A vocabulary that writes "kleine Haus" and "Garten" in pieces of one
    or two letters, both starting with "▁": going on with one phrase must
    not lower a hypothesis's bank, or the beam never reaches them."""
    from benchmarks.marian_model import sentences

    from tests.serve.test_checks import imported

    translator = load_translator(imported(tmp_path), "cpu")
    texts = sentences("de", 4, "val")
    wanted = [{"include": ["kleine Haus", "Garten"]}] * len(texts)
    found = translator.translate_nbest(
        texts, SearchOptions(beam_size=4), constraints=wanted
    )
    for [best, *_] in found:
        assert best.complete and best.constraints_met, best.text
