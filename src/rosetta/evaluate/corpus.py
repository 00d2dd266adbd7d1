"""Corpus-level scores for reporting: sacreBLEU's BLEU, chrF and TER, with
their signatures, and two BLEU variants (``METRICS``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sacrebleu.metrics import BLEU, CHRF, TER

from rosetta.evaluate.bleu import bleu as sentence_bleu


@dataclass(frozen=True)
class Score:
    name: str
    value: float
    signature: str

    def __str__(self) -> str:
        return f"{self.name} = {self.value:.2f}  ({self.signature})"


def sacrebleu_score(hypotheses: list[str], references: list[str]) -> Score:
    """Standard cased, detokenized corpus BLEU (sacreBLEU's 13a tokenizer)."""
    metric = BLEU()
    result = metric.corpus_score(hypotheses, [references])
    return Score("BLEU", result.score, str(metric.get_signature()))


def tokenized_lowercase_bleu(hypotheses: list[str], references: list[str]) -> Score:
    """Lower-cased BLEU on 13a-tokenized text, the convention of published
    Multi30k results (which score tokenized, lower-cased output)."""
    metric = BLEU(lowercase=True, tokenize="13a")
    result = metric.corpus_score(hypotheses, [references])
    return Score("BLEU-tok-lc", result.score, str(metric.get_signature()))


def chrf_score(hypotheses: list[str], references: list[str]) -> Score:
    metric = CHRF()
    result = metric.corpus_score(hypotheses, [references])
    return Score("chrF", result.score, str(metric.get_signature()))


def ter_score(hypotheses: list[str], references: list[str]) -> Score:
    """Translation edit rate: the word edits (shifts included) that turn a
    translation into its reference, per reference word, in %; lower is
    better."""
    metric = TER()
    result = metric.corpus_score(hypotheses, [references])
    return Score("TER", result.score, str(metric.get_signature()))


def mean_sentence_bleu(
    hypotheses: list[str], references: list[str], k: int = 4
) -> float:
    """Average of the sentence-level ``bleu`` (whitespace tokens), times 100."""
    if not hypotheses:
        return 0.0
    pairs = zip(hypotheses, references, strict=True)
    return 100.0 * sum(sentence_bleu(h, r, k) for h, r in pairs) / len(hypotheses)


def sentence_bleu_score(hypotheses: list[str], references: list[str]) -> Score:
    return Score(
        "sentence-BLEU",
        mean_sentence_bleu(hypotheses, references),
        "mean sentence BLEU, n-grams 1..4 weighted 1/2^n, whitespace tokens",
    )


# what ``rosetta evaluate --metrics`` names, in the order it prints them
METRICS: dict[str, Callable[[list[str], list[str]], Score]] = {
    "bleu": sacrebleu_score,
    "chrf": chrf_score,
    "ter": ter_score,
    "bleu-tok-lc": tokenized_lowercase_bleu,
    "sentence-bleu": sentence_bleu_score,
}


def evaluate_all(
    hypotheses: list[str],
    references: list[str],
    metrics: Sequence[str] = tuple(METRICS),
) -> list[Score]:
    """The ``metrics`` (names of ``METRICS``, default all) of the corpus."""
    if len(hypotheses) != len(references):
        raise ValueError(
            f"{len(hypotheses)} hypotheses but {len(references)} references"
        )
    unknown = [name for name in metrics if name not in METRICS]
    if isinstance(metrics, str) or unknown:
        raise ValueError(f"metrics: use names from {', '.join(METRICS)}")
    return [METRICS[name](hypotheses, references) for name in metrics]
