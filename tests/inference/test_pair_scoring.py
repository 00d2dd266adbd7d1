"""``rosetta score``: a pair's log-probability under the model, checked
against a teacher-forced sum written independently, and equal to the
score ``translate --format jsonl`` gives the model's own translation."""

import json

import pytest

from rosetta.cli import main
from rosetta.errors import RosettaError
from rosetta.inference.pair_scoring import score_pairs
from rosetta.jobs.loading import load_translator
from tests.support.next_token import teacher_forced_sum

SOURCES = ["a b c", "d e", "c c a b", "e"]


@pytest.mark.reference
@pytest.mark.parametrize("kind", ["transformer", "rnn-attention"])
def test_a_pair_scores_its_teacher_forced_sum(toy_run, kind):
    translator = load_translator(toy_run(kind), "cpu")
    targets = ["c b a", "e d", "b a c c", ""]
    found = score_pairs(translator, SOURCES, targets, batch_size=3)
    for source, target, score in zip(SOURCES, targets, found, strict=True):
        expected = teacher_forced_sum(translator, source, target)
        assert score.score == pytest.approx(expected, abs=1e-4)
        assert len(score.token_scores) == len(target.split()) + 1


@pytest.mark.reference
def test_a_models_own_translation_scores_what_translate_says(toy_run, tmp_path, capsys):
    run = toy_run("transformer")
    source = tmp_path / "in.txt"
    source.write_text("".join(s + "\n" for s in SOURCES))
    argv = ["translate", "-m", str(run), "-i", str(source), "--beam", "3"]
    assert main([*argv, "--format", "jsonl"]) == 0
    best = [
        json.loads(line)["hypotheses"][0]
        for line in capsys.readouterr().out.splitlines()
    ]
    target = tmp_path / "out.txt"
    target.write_text("".join(h["text"] + "\n" for h in best))
    scored = ["score", "-m", str(run), "--src", str(source), "--tgt", str(target)]
    assert main([*scored, "--format", "jsonl", "--token-scores"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    for hypothesis, line in zip(best, lines, strict=True):
        assert line["score"] == pytest.approx(hypothesis["score"], abs=1e-5)
        assert line["normalized_score"] == pytest.approx(
            hypothesis["normalized_score"], abs=1e-5
        )
        assert len(line["token_scores"]) == line["tokens"]
    assert main(scored) == 0
    text = capsys.readouterr().out.splitlines()
    assert [float(t.split("\t")[0]) for t in text] == pytest.approx(
        [line["score"] for line in lines], abs=1e-5
    )


def test_what_cannot_be_scored_is_refused(toy_run, tmp_path, capsys):
    translator = load_translator(toy_run("nat"), "cpu")
    with pytest.raises(RosettaError, match="decodes token by token"):
        score_pairs(translator, ["a"], ["b"])
    run = load_translator(toy_run("transformer"), "cpu")
    with pytest.raises(RosettaError, match="2 sources but 1 targets"):
        score_pairs(run, ["a", "b"], ["c"])
    src, tgt = tmp_path / "src", tmp_path / "tgt"
    src.write_text("a\nb\n")
    tgt.write_text("c\n")
    argv = ["score", "-m", str(toy_run("transformer")), "--src", str(src)]
    assert main([*argv, "--tgt", str(tgt)]) != 0
    assert "has 2 lines but" in capsys.readouterr().err
