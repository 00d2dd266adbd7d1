import math

import pytest
import sacrebleu

from rosetta.evaluate import bleu, evaluate_all, sacrebleu_score


@pytest.mark.reference
def test_equal_sequences_score_one():
    assert bleu("a b c d e", "a b c d e") == 1.0
    assert bleu(["x"], ["x"]) == 1.0  # shorter than k: orders without n-grams skipped


@pytest.mark.reference
def test_hand_computed_example():
    # pred "a b c d", label "a b e d f": p1 = 3/4, p2 = 1/3, p3 = 0/2 -> 0
    assert bleu("a b c d", "a b e d f") == 0.0
    # with k=2: brevity exp(1 - 5/4), p1^(1/2) p2^(1/4)
    expected = math.exp(1 - 5 / 4) * (3 / 4) ** 0.5 * (1 / 3) ** 0.25
    assert bleu("a b c d", "a b e d f", k=2) == pytest.approx(expected)


@pytest.mark.reference
def test_clipping_counts_each_label_ngram_once():
    # pred "the the the", label "the cat": p1 = 1/3 (clipped), p2 = 0/2
    expected = math.exp(min(0, 1 - 2 / 3)) * (1 / 3) ** 0.5
    assert bleu("the the the", "the cat", k=1) == pytest.approx(expected)


def test_longer_prediction_has_no_brevity_penalty_and_empty_scores_zero():
    assert bleu("a b c", "a b", k=1) == pytest.approx((2 / 3) ** 0.5)
    assert bleu("", "a b") == 0.0


@pytest.mark.reference
def test_corpus_bleu_equals_sacrebleu():
    hyps = ["The cat sat on the mat.", "A dog runs in the snow"]
    refs = ["The cat is on the mat.", "A dog is running in the snow."]
    ours = sacrebleu_score(hyps, refs)
    assert ours.value == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score)
    assert ours.signature.startswith("nrefs:1")
    names = [score.name for score in evaluate_all(hyps, refs)]
    assert names == ["BLEU", "chrF", "TER", "BLEU-tok-lc", "sentence-BLEU"]


@pytest.mark.reference
def test_ter_is_sacrebleus_with_its_signature_and_metrics_choose():
    hyps = ["The cat sat on the mat.", "A dog runs in the snow"]
    refs = ["The cat is on the mat.", "A dog is running in the snow."]
    ter, bleu = evaluate_all(hyps, refs, ["ter", "bleu"])
    expected = sacrebleu.metrics.TER().corpus_score(hyps, [refs])
    assert (ter.name, ter.value) == ("TER", pytest.approx(expected.score))
    assert ter.signature.startswith("nrefs:1") and "case:lc" in ter.signature
    assert bleu.name == "BLEU"
    with pytest.raises(ValueError, match="metrics: use names from bleu, chrf, ter"):
        evaluate_all(hyps, refs, "ter")  # a string is not a list of names
    with pytest.raises(ValueError, match="metrics: use names from"):
        evaluate_all(hyps, refs, ["meteor"])
