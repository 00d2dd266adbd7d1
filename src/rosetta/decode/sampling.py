"""Sampling: draw each next token instead of taking the most likely one.

For generation and for data augmentation such as back-translation. The model's
distribution is reshaped by a temperature, then optionally restricted to the
``top_k`` most likely tokens and to the smallest set whose probability reaches
``top_p`` (nucleus sampling), renormalised, and sampled. Hypothesis scores are
the model's own log-probabilities of the drawn tokens.
"""

from __future__ import annotations

import torch

from rosetta.decode.greedy import Hypothesis, TokenChooser, greedy_search
from rosetta.models.interface import EncoderDecoder


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


def sample_search(
    model: EncoderDecoder,
    src: torch.Tensor,
    src_mask: torch.Tensor,
    *,
    bos_id: int,
    eos_id: int,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
    max_len_a: float = 1.5,
    max_len_b: int = 10,
    max_len_cap: int | None = None,
) -> list[Hypothesis]:
    """One sampled translation per sentence of the batch ``src`` (n, S)."""
    return greedy_search(
        model,
        src,
        src_mask,
        bos_id=bos_id,
        eos_id=eos_id,
        max_len_a=max_len_a,
        max_len_b=max_len_b,
        max_len_cap=max_len_cap,
        choose=sampler(temperature, top_k, top_p, generator),
    )
