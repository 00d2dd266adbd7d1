"""Masked, label-smoothed cross-entropy (SPEC §4)."""

from __future__ import annotations

import torch


def label_smoothed_cross_entropy(
    logits: torch.Tensor, target: torch.Tensor, epsilon: float, pad_id: int
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Sum of the loss over real (non-pad) target positions.

    The target distribution puts ``1 - epsilon`` on the gold token and spreads
    ``epsilon`` evenly over the other ``V - 1`` tokens (SPEC §4), so the loss
    at one position is ``-(1-eps) log p_gold - eps/(V-1) sum_{y != gold} log p_y``.
    Positions where ``target == pad_id`` are masked out.

    Args:
        logits: (n, T, V). target: (n, T) ids.
    Returns:
        (loss sum, negative log-likelihood sum, number of real tokens); divide
        by the count for a per-token mean.
    """
    log_probs = torch.log_softmax(logits.float(), dim=-1)  # (n, T, V)
    mask = target != pad_id  # (n, T)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (n, T)
    loss = nll
    if epsilon > 0.0:
        vocab = logits.size(-1)
        others = -log_probs.sum(dim=-1) - nll  # -sum over y != gold of log p_y
        loss = (1.0 - epsilon) * nll + epsilon / (vocab - 1) * others
    return loss[mask].sum(), nll[mask].sum(), int(mask.sum())
