"""The distribution every search scores with, computed independently of
``rosetta.search``: a softmax over every token but ``<bos>``, which never
comes next (its row may repeat another's in an imported model)."""

from __future__ import annotations

import math

import torch

from rosetta.data.vocab import BOS_ID, EOS_ID


def next_token_log_probs(logits: torch.Tensor) -> torch.Tensor:
    """Log-probabilities (..., V) of ``logits`` with ``<bos>`` left out of
    the softmax (its own entry -inf)."""
    logits = logits.clone()
    logits[..., BOS_ID] = float("-inf")
    return torch.log_softmax(logits, dim=-1)


def teacher_forced_sum(translator, source: str, target: str) -> float:
    """Σ log P(y_t | y_<t, x), <eos> included, one pair at a time through the
    model's own forward pass, <bos> ruled out and renormalised as search."""
    model = translator.model
    src = torch.tensor([[*translator.encode(source), EOS_ID]])
    ids = [*translator.tokenizers.tgt.encode(target), EOS_ID]
    tgt_in = torch.tensor([[BOS_ID, *ids[:-1]]])
    with torch.no_grad():
        features = model(src, src != 0, tgt_in)
        log_probs = torch.log_softmax(model.output_proj(features).double(), dim=-1)[0]
    total = 0.0
    for t, token in enumerate(ids):
        p_bos = math.exp(log_probs[t, BOS_ID])
        total += float(log_probs[t, token]) - math.log1p(-p_bos)
    return total
