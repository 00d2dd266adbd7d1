"""Ensembles: one model's ensemble is the model, a model with itself gives
its tokens, every search and control runs on it, and a translation's score
is the weighted mean of the models' teacher-forced sums, computed
independently through each model's own forward pass."""

import copy
import json

import pytest

from rosetta.cli import main
from rosetta.data.tokenizer import TokenizerPair, tokenizer_from_dict
from rosetta.errors import RosettaError
from rosetta.inference.ensemble import EnsembleTranslator, ensemble_weights
from rosetta.inference.pair_scoring import score_pairs
from rosetta.jobs.loading import load, load_translator
from rosetta.search.options import SearchOptions
from tests.support.next_token import teacher_forced_sum

SOURCES = [
    "alpha beta gamma",
    "delta eps",
    "gamma gamma alpha beta",
    "eps",
    "",
    "beta delta alpha eps gamma",
]

# every search, and the controls and constraints, each on its own
SEARCHES = {
    "greedy": SearchOptions(beam_size=1),
    "beam": SearchOptions(beam_size=4, nbest=3, need_attention=True),
    "refill": SearchOptions(beam_size=3, refill=True, stopping="k_finished"),
    "sampling": SearchOptions(sample=True, seed=7, top_k=4),
    "controls": SearchOptions(
        beam_size=3, min_length=4, no_repeat_ngram=2, ban=("ALPHA",), max_len_b=6
    ),
}
CONSTRAINTS = [
    {"include": ["BETA"]},
    {"prefix": "EPS"},
    None,
    {"exclude": ["EPS"]},
    None,
    {"include": ["DELTA"], "prefix": "GAMMA"},
]


def found(translator, options, constraints=None):
    results = translator.translate_nbest(
        SOURCES, options, batch_size=2, constraints=constraints
    )
    return [
        [
            (
                t.token_ids,
                t.score,
                t.normalized_score,
                t.complete,
                None if t.attention is None else t.attention.tolist(),
            )
            for t in hypotheses
        ]
        for hypotheses in results
    ]


def tokens_of(results):
    return [[(h[0], h[3]) for h in hypotheses] for hypotheses in results]


@pytest.mark.reference
@pytest.mark.parametrize("search", list(SEARCHES))
def test_an_ensemble_of_one_model_or_of_itself_is_the_model(toy_run, search):
    run = toy_run("transformer")
    model = load_translator(run, "cpu")
    options = SEARCHES[search]
    expected = found(model, options)
    assert found(load([run], "cpu"), options) == expected
    assert found(load([run, run], "cpu"), options) == expected  # x/2 + x/2 = x
    # other weights round each log-probability (0.75x + 0.25x): the same tokens
    weighted = found(load([run, run], "cpu", weights=[3, 1]), options)
    assert tokens_of(weighted) == tokens_of(expected)
    scores = [h[1] for hs in weighted for h in hs]
    assert scores == pytest.approx([h[1] for hs in expected for h in hs], abs=1e-5)
    with_constraints = found(model, SearchOptions(beam_size=3), CONSTRAINTS)
    ensemble = load([run, run], "cpu")
    assert found(ensemble, SearchOptions(beam_size=3), CONSTRAINTS) == with_constraints


@pytest.mark.reference
@pytest.mark.parametrize("weights", [None, [1.0, 3.0]])
def test_a_translation_scores_the_weighted_mean_of_the_models(toy_run, weights):
    runs = [toy_run("transformer"), toy_run("rnn-attention")]
    members = [load_translator(run, "cpu") for run in runs]
    ensemble = load(runs, "cpu", weights=weights)
    assert isinstance(ensemble, EnsembleTranslator)
    share = ensemble_weights(weights, 2)
    results = ensemble.translate_nbest(SOURCES, SearchOptions(beam_size=3, nbest=2))
    mixed = 0
    for source, hypotheses in zip(SOURCES, results, strict=True):
        for hypothesis in hypotheses:
            parts = [teacher_forced_sum(m, source, hypothesis.text) for m in members]
            expected = sum(w * part for w, part in zip(share, parts, strict=True))
            assert hypothesis.score == pytest.approx(expected, abs=1e-4)
            mixed += abs(parts[0] - parts[1]) > 1e-3
    assert mixed  # the two models disagree: the mean is not one of them
    targets = [h[0].text if h else "" for h in results]
    scored = score_pairs(ensemble, SOURCES, targets)
    alone = [score_pairs(m, SOURCES, targets) for m in members]
    for number, score in enumerate(scored):
        expected = sum(w * a[number].score for w, a in zip(share, alone, strict=True))
        assert score.score == pytest.approx(expected, abs=1e-5)


def test_what_an_ensemble_cannot_take_is_refused(toy_run):
    run = toy_run("transformer")
    model = load_translator(run, "cpu")
    other = copy.copy(model)
    own = model.tokenizers.tgt.to_dict()["tokens"]
    shuffled = tokenizer_from_dict({"kind": "word", "tokens": [*own[:4], *own[:3:-1]]})
    other.tokenizers = TokenizerPair(shuffled, model.tokenizers.tgt)
    with pytest.raises(
        RosettaError, match=r"b: its source vocabulary is not a's \(token 4"
    ):
        EnsembleTranslator([model, other], names=["a", "b"])
    other.tokenizers = TokenizerPair(model.tokenizers.src, shuffled)
    with pytest.raises(RosettaError, match="b: its target vocabulary is not a's"):
        EnsembleTranslator([model, other], names=["a", "b"])
    nat = toy_run("nat")
    with pytest.raises(RosettaError, match="NATTranslator does not decode a token"):
        load([run, nat], "cpu")
    with pytest.raises(RosettaError, match="1 ensemble weights for 2 models"):
        load([run, run], "cpu", weights=[1])
    for bad in ([1, -1], [1, float("nan")], [1, "2"], "12"):
        with pytest.raises(RosettaError, match="ensemble weight"):
            load([run, run], "cpu", weights=bad)
    with pytest.raises(RosettaError, match="weights go with a list of models"):
        load(run, "cpu", weights=[1])
    with pytest.raises(RosettaError, match="a path, or a list of paths"):
        load([], "cpu")
    with pytest.raises(RosettaError, match="in Rosetta's engine"):
        load([run, run], "cpu", engine="ctranslate2")


def test_the_command_line_takes_an_ensemble(toy_run, tmp_path, capsys):
    run = str(toy_run("transformer"))
    source = tmp_path / "in.txt"
    source.write_text("alpha beta\ndelta eps gamma\n")
    argv = ["translate", "-i", str(source), "--format", "jsonl", "--beam", "3"]
    assert main([*argv, "-m", run]) == 0
    alone = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert main([*argv, "-m", run, "-m", run, "--ensemble-weights", "2", "1"]) == 0
    out, err = capsys.readouterr()
    both = [json.loads(line) for line in out.splitlines()]
    for mine, its in zip(both, alone, strict=True):
        assert mine["hypotheses"][0]["token_ids"] == its["hypotheses"][0]["token_ids"]
        score = pytest.approx(its["hypotheses"][0]["score"], abs=1e-5)
        assert mine["hypotheses"][0]["score"] == score
    assert err.count("model: ") == 2  # each model's checkpoint said
    assert main([*argv, "-m", run, "-m", run, "--ensemble-weights", "1"]) != 0
    assert "1 ensemble weights for 2 models" in capsys.readouterr().err
    assert main([*argv, "-m", run, "--ensemble-weights", "0"]) != 0
    assert "--ensemble-weights" in capsys.readouterr().err
    reference = tmp_path / "ref.txt"
    reference.write_text("BETA ALPHA\nGAMMA EPS DELTA\n")
    evaluate = ["evaluate", "--src", str(source), "--ref", str(reference)]
    assert main([*evaluate, "-m", run, "-m", run]) == 0


def test_the_server_translates_with_an_ensemble(toy_run):
    from fastapi.testclient import TestClient

    from rosetta.serve.app import create_app

    ensemble = load([toy_run("transformer"), toy_run("rnn-attention")], "cpu")
    expected = ensemble.translate(SOURCES, SearchOptions(beam_size=3))
    members = ensemble.members
    with TestClient(create_app(ensemble, model_name="a + b")) as client:
        info = client.get("/info").json()
        assert info["parameters"] == sum(m.parameter_count for m in members)
        body = {"sentences": SOURCES, "beam_size": 3}
        response = client.post("/translate", json=body)
    assert response.status_code == 200, response.text
    served = response.json()["translations"]
    assert [t["hypotheses"][0]["text"] if t["hypotheses"] else "" for t in served] == (
        expected
    )
