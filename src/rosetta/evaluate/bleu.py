"""Sentence-level BLEU in the form used by the Dive into Deep Learning book:
a brevity factor times the clipped n-gram precisions, the n-th weighted
1/2^n so that long matches count more. It scores one sentence pair, without
smoothing; for corpus-level scores comparable with published ones use
``sacrebleu_score``."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence


def _ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def bleu(
    pred_tokens: Sequence[str] | str, label_tokens: Sequence[str] | str, k: int = 4
) -> float:
    """``exp(min(0, 1 - len_label / len_pred)) * prod_{n=1..k} p_n^(1/2^n)``.

    ``p_n`` is the clipped n-gram precision: matches (each label n-gram used at
    most as often as it occurs) over the number of predicted n-grams. Orders
    for which the prediction has no n-gram at all (it is shorter than n) are
    left out of the product, so equal sequences always score 1. Strings are
    split on whitespace. An empty prediction scores 0.
    """
    pred = pred_tokens.split() if isinstance(pred_tokens, str) else list(pred_tokens)
    label = (
        label_tokens.split() if isinstance(label_tokens, str) else list(label_tokens)
    )
    if not pred:
        return 0.0
    score = math.exp(min(0.0, 1.0 - len(label) / len(pred)))
    for n in range(1, k + 1):
        predicted = _ngrams(pred, n)
        if not predicted:
            break
        available = Counter(_ngrams(label, n))
        matches = 0
        for gram in predicted:
            if available[gram] > 0:
                matches += 1
                available[gram] -= 1
        score *= math.pow(matches / len(predicted), math.pow(0.5, n))
    return score
