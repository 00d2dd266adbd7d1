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

    Its gradient with respect to the logits is ``softmax(z) - q``, ``q`` that
    target distribution; :class:`_SmoothedCrossEntropy` writes it in one pass
    over the saved log-probabilities instead of backpropagating through the
    gather, the sum and the log-softmax one by one.

    Args:
        logits: (n, T, V). target: (n, T) ids.
    Returns:
        (loss sum, negative log-likelihood sum, number of real tokens); divide
        by the count for a per-token mean.
    """
    mask = target != pad_id  # (n, T)
    loss, nll = _SmoothedCrossEntropy.apply(logits, target, mask, epsilon)
    return loss, nll, int(mask.sum())


def at_least_float32(x: torch.Tensor) -> torch.Tensor:
    """bf16/fp16 logits in float32 for the loss; float32/float64 unchanged."""
    return x.to(torch.promote_types(x.dtype, torch.float32))


class _SmoothedCrossEntropy(torch.autograd.Function):
    """Forward: (loss sum, nll sum) in float32. Backward: d / d logits."""

    @staticmethod
    def forward(ctx, logits, target, mask, epsilon):  # type: ignore[override]
        log_probs = torch.log_softmax(at_least_float32(logits), dim=-1)
        vocab = log_probs.size(-1)
        nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # -log p_gold
        loss = nll
        if epsilon > 0.0:
            others = -log_probs.sum(dim=-1) - nll  # -Σ_{y≠g} log p_y
            loss = (1.0 - epsilon) * nll + epsilon / (vocab - 1) * others
        ctx.save_for_backward(log_probs, target, mask)
        ctx.epsilon = epsilon
        ctx.logits_dtype = logits.dtype
        return loss[mask].sum(), nll[mask].sum()

    @staticmethod
    def backward(ctx, grad_loss, grad_nll):  # type: ignore[override]
        """``g_loss (softmax(z) - q) + g_nll (softmax(z) - onehot(gold))`` at
        real positions, 0 at padding; ``q`` is the smoothed target."""
        log_probs, target, mask = ctx.saved_tensors
        epsilon, vocab = ctx.epsilon, log_probs.size(-1)
        off_gold = epsilon / (vocab - 1) if epsilon > 0.0 else 0.0
        real = mask.to(log_probs.dtype)
        loss_weight, nll_weight = grad_loss * real, grad_nll * real  # (n, T)
        grad = log_probs.exp()  # softmax(z)
        grad.mul_((loss_weight + nll_weight).unsqueeze(-1))
        if off_gold:
            grad.sub_((loss_weight * off_gold).unsqueeze(-1))
        on_gold = loss_weight * (off_gold - (1.0 - epsilon)) - nll_weight
        grad.scatter_add_(-1, target.unsqueeze(-1), on_gold.unsqueeze(-1))
        return grad.to(ctx.logits_dtype), None, None, None
