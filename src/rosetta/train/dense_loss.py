"""The projected, label-smoothed loss with shapes the data does not decide:
the form a compiled training step (``rosetta.runtime.compiled``) traces.

``projected_label_smoothed_cross_entropy`` (``rosetta.train.loss``) selects
the real target positions and cuts them into blocks of rows: the number of
rows, and of blocks, depends on the batch's padding, which a compiler can
only follow by stopping its graph there. This form projects every position,
padding included, and zeroes padding's share with a mask; it bounds memory
by cutting the vocabulary, whose size is fixed, into ``vocab_chunks`` equal
slices. With one slice the logits are made once; with several, twice (once
for the log-sum-exp, once for the gradient), one slice at a time:

    log p_y       = z_y - log Σ_v exp z_v,    the log-sum-exp over slices
                    log Σ_slices exp(logsumexp(z_slice))
    d loss / d z  = softmax(z) - q,           q the smoothed target

The gradients of the features, weight and bias are computed in the forward
pass, as in the selected form; backward scales them by the loss's gradient.
"""

from __future__ import annotations

import torch
from torch import nn

from rosetta.runtime.precision import autocast_dtype
from rosetta.train.loss import (
    at_least_float32,
    block_elements,
    off_gold_probability,
    projected_label_smoothed_cross_entropy,
    scaled_gradients,
    smoothed_from_sums,
)


def dense_projected_label_smoothed_cross_entropy(
    features: torch.Tensor,
    output_proj: nn.Linear,
    target: torch.Tensor,
    epsilon: float,
    pad_id: int,
    vocab_chunks: int = 1,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``label_smoothed_cross_entropy(output_proj(features), target, ...)``
    without data-dependent shapes.

    Args:
        features: (n, T, d). target: (n, T) ids, ``pad_id`` where no token.
        vocab_chunks: slices of the vocabulary made one at a time (memory
            per slice: n·T·V/vocab_chunks logits).
    Returns:
        (loss sum, nll sum, real tokens), each a tensor: nothing is read on
        the host. The nll sum carries no gradient.
    """
    keep = (target != pad_id).reshape(-1)
    compute_dtype = autocast_dtype(features.device.type) or output_proj.weight.dtype
    flat = at_least_float32(features.reshape(-1, features.size(-1)))
    loss, nll = _DenseSmoothedCrossEntropy.apply(
        flat,
        output_proj.weight,
        output_proj.bias,
        target.reshape(-1),
        keep.to(flat.dtype),
        epsilon,
        vocab_chunks,
        compute_dtype,
    )
    return loss, nll, keep.sum()


class _DenseSmoothedCrossEntropy(torch.autograd.Function):
    """Forward: (loss sum, nll sum) over the kept rows of ``x W^T + b``, with
    the gradients of x, W and b. Backward: those times the loss's gradient."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx, features, weight, bias, target, keep, epsilon, chunks, compute_dtype
    ):
        with torch.autocast(features.device.type, enabled=False):
            grads, loss, nll = dense_loss_and_gradients(
                features, weight, bias, target, keep, epsilon, chunks, compute_dtype
            )
        ctx.save_for_backward(*grads)
        ctx.has_bias = bias is not None
        ctx.mark_non_differentiable(nll)
        return loss, nll

    @staticmethod
    def backward(ctx, grad_loss, grad_nll):  # type: ignore[override]
        return scaled_gradients(ctx, grad_loss, others=5)


def vocabulary_slices(vocab: int, chunks: int) -> list[tuple[int, int]]:
    """``chunks`` (at most ``vocab``) consecutive (start, stop) slices."""
    width = -(-vocab // max(1, min(chunks, vocab)))
    return [(start, min(start + width, vocab)) for start in range(0, vocab, width)]


def dense_loss_and_gradients(
    features: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    target: torch.Tensor,
    keep: torch.Tensor,
    epsilon: float,
    chunks: int,
    compute_dtype: torch.dtype,
) -> tuple[tuple[torch.Tensor | None, ...], torch.Tensor, torch.Tensor]:
    """((d/dx, d/dW, d/db), loss sum, nll sum) for logits ``x W^T + b`` at
    rows (N, d) weighted by ``keep`` (1 real, 0 padding)."""
    vocab = weight.size(0)
    slices = vocabulary_slices(vocab, chunks)
    off_gold = off_gold_probability(epsilon, vocab)
    on_gold = off_gold - (1.0 - epsilon)  # d loss / d z_gold = p_gold + this
    # padding rows as zeros: whatever they held (even inf) adds nothing
    kept = keep.unsqueeze(1) > 0
    x = torch.where(kept, features, 0.0).to(compute_dtype)
    w = weight.detach().to(compute_dtype)
    b = None if bias is None else bias.detach().to(compute_dtype)

    def logits(start: int, stop: int) -> torch.Tensor:
        z = x @ w[start:stop].t()
        if b is not None:
            z = z + b[start:stop]
        return z.to(features.dtype)  # the softmax in float32 at least

    # pass 1: log Σ exp z, the gold logit and Σ z, slice by slice
    made = [logits(*span) for span in slices] if len(slices) == 1 else None
    slice_lse, gold, sum_z = [], torch.zeros_like(keep), torch.zeros_like(keep)
    for index, (start, stop) in enumerate(slices):
        z = made[index] if made is not None else logits(start, stop)
        slice_lse.append(z.logsumexp(dim=-1))
        inside = (target >= start) & (target < stop)
        column = (target - start).clamp(0, stop - start - 1).unsqueeze(1)
        gold = gold + torch.where(inside, z.gather(1, column).squeeze(1), 0.0)
        sum_z = sum_z + z.sum(dim=-1)
    lse = torch.stack(slice_lse, dim=-1).logsumexp(dim=-1)  # (N,)
    # pass 2: the gradient softmax(z) - q of each slice, padding rows zeroed
    grad_x = torch.zeros_like(features)
    grad_w_slices, grad_b_slices = [], []
    for index, (start, stop) in enumerate(slices):
        z = made[index] if made is not None else logits(start, stop)
        grad = (z - lse.unsqueeze(1)).exp() - off_gold
        inside = ((target >= start) & (target < stop)).to(grad.dtype)
        column = (target - start).clamp(0, stop - start - 1).unsqueeze(1)
        grad = grad.scatter_add(1, column, (on_gold * inside).unsqueeze(1))
        grad = torch.where(kept, grad, 0.0)
        grad_b_slices.append(grad.sum(dim=0))
        low = grad.to(compute_dtype)  # the products in compute_dtype, sums float32
        grad_x = grad_x + (low @ w[start:stop]).to(grad_x.dtype)
        grad_w_slices.append((low.t() @ x).to(weight.dtype))
    grad_w = torch.cat(grad_w_slices, dim=0)
    grad_b = None if bias is None else torch.cat(grad_b_slices).to(bias.dtype)
    sum_log_probs = sum_z - vocab * lse if epsilon > 0.0 else None
    loss, nll = smoothed_from_sums(gold - lse, sum_log_probs, epsilon, vocab)
    real = keep > 0
    loss_sum = torch.where(real, loss, 0.0).sum()
    return (grad_x, grad_w, grad_b), loss_sum, torch.where(real, nll, 0.0).sum()


def vocab_chunks_for(batch_tokens: int, vocab: int, device: torch.device) -> int:
    """Slices of the vocabulary that keep a batch of ``batch_tokens`` within
    the projected loss's block of logits on ``device`` (``block_elements``)."""
    return max(1, -(-batch_tokens * vocab // block_elements(device)))


def training_loss_sum(
    features: torch.Tensor,
    output_proj: nn.Linear,
    target: torch.Tensor,
    epsilon: float,
    pad_id: int,
    batch_tokens: int,
) -> torch.Tensor:
    """A batch's summed smoothed loss, in the form of the code running it:
    dense inside a graph being compiled, the real rows selected eagerly (the
    two are tested equal)."""
    if torch.compiler.is_compiling():
        vocab = output_proj.weight.size(0)
        chunks = vocab_chunks_for(batch_tokens, vocab, features.device)
        return dense_projected_label_smoothed_cross_entropy(
            features, output_proj, target, epsilon, pad_id, chunks
        )[0]
    return projected_label_smoothed_cross_entropy(
        features, output_proj, target, epsilon, pad_id
    )[0]
