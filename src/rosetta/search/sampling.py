"""Sampling: draw each next token instead of taking the most likely one.

For generation and for data augmentation such as back-translation. The model's
distribution is reshaped by a temperature, then optionally restricted to the
``top_k`` most likely tokens and to the smallest set whose probability reaches
``top_p`` (nucleus sampling), renormalised, and sampled. Hypothesis scores are
the model's own log-probabilities of the drawn tokens. ``sampler`` makes the
token chooser that greedy search's loop calls in place of the argmax:
``greedy_search(..., choose=sampler(top_p=0.9))``.
"""

from __future__ import annotations

import torch

from rosetta.search.greedy import TokenChooser


def sampler(
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
) -> TokenChooser:
    """A token chooser that samples; ``top_k=0`` and ``top_p=1`` keep every token."""
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    if top_k < 0:
        raise ValueError(f"top_k must be >= 0, got {top_k}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")

    def choose(log_probs: torch.Tensor) -> torch.Tensor:
        logits = log_probs.float() / temperature  # (n, V)
        if 0 < top_k < logits.size(-1):
            kth = logits.topk(top_k, dim=-1).values[:, -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        if top_p < 1:
            sorted_logits, order = logits.sort(dim=-1, descending=True)
            probs = sorted_logits.softmax(dim=-1)
            before = probs.cumsum(dim=-1) - probs  # mass of the better tokens
            drop_sorted = before >= top_p  # the best token is always kept
            drop = drop_sorted.scatter(1, order, drop_sorted)
            logits = logits.masked_fill(drop, float("-inf"))
        probs = logits.softmax(dim=-1)
        return torch.multinomial(probs, 1, generator=generator).squeeze(1)

    return choose
