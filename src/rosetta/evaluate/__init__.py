"""A sentence-level BLEU written out in full, and the field's standard
sacreBLEU BLEU and chrF."""

from rosetta.evaluate.bleu import bleu
from rosetta.evaluate.corpus import (
    Score,
    chrf_score,
    evaluate_all,
    sacrebleu_score,
    tokenized_lowercase_bleu,
)

__all__ = [
    "Score",
    "bleu",
    "chrf_score",
    "evaluate_all",
    "sacrebleu_score",
    "tokenized_lowercase_bleu",
]
