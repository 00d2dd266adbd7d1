"""Masked, label-smoothed cross-entropy: the plain reference, and the
fused one the trainer uses, with the output projection inside."""

from __future__ import annotations

import torch
from torch import nn

from rosetta.runtime.precision import autocast_dtype


def label_smoothed_cross_entropy(
    logits: torch.Tensor, target: torch.Tensor, epsilon: float, pad_id: int
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Sum of the loss over real (non-pad) target positions.

    The target distribution puts ``1 - epsilon`` on the gold token and spreads
    ``epsilon`` evenly over the other ``V - 1`` tokens, so the loss at one
    position is ``-(1-eps) log p_gold - eps/(V-1) sum_{y != gold} log p_y``.
    Positions where ``target == pad_id`` are masked out. Plain autograd
    computes the gradient: this is the reference that the trainer's fused
    ``projected_label_smoothed_cross_entropy`` is tested against.

    Args:
        logits: (n, T, V). target: (n, T) ids.
    Returns:
        (loss sum, negative log-likelihood sum, number of real tokens); divide
        by the count for a per-token mean.
    """
    mask = target != pad_id  # (n, T)
    log_probs = torch.log_softmax(at_least_float32(logits), dim=-1)
    loss, nll = smoothed_terms(log_probs, target, epsilon)
    return loss[mask].sum(), nll[mask].sum(), int(mask.sum())


def at_least_float32(x: torch.Tensor) -> torch.Tensor:
    """bf16/fp16 logits in float32 for the loss; float32/float64 unchanged."""
    return x.to(torch.promote_types(x.dtype, torch.float32))


def off_gold_probability(epsilon: float, vocab: int) -> float:
    """What the smoothed target puts on each token but the gold one."""
    return epsilon / (vocab - 1) if epsilon > 0.0 else 0.0


def smoothed_terms(
    log_probs: torch.Tensor, target: torch.Tensor, epsilon: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per position, from log-probabilities (..., V) and gold ids (...): the
    smoothed loss ``-(1-eps) log p_gold - eps/(V-1) Σ_{y≠gold} log p_y`` and
    the negative log-likelihood ``-log p_gold``."""
    gold = log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # log p_gold
    total = log_probs.sum(dim=-1) if epsilon > 0.0 else None  # Σ_y log p_y
    return smoothed_from_sums(gold, total, epsilon, log_probs.size(-1))


def smoothed_from_sums(
    gold_log_probs: torch.Tensor,
    sum_log_probs: torch.Tensor | None,
    epsilon: float,
    vocab: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``smoothed_terms`` from ``log p_gold`` and ``Σ_y log p_y`` per position
    (the sum may be None without smoothing)."""
    nll = -gold_log_probs  # -log p_gold
    if epsilon <= 0.0 or sum_log_probs is None:
        return nll, nll
    others = -sum_log_probs - nll  # -Σ_{y≠g} log p_y
    off_gold = off_gold_probability(epsilon, vocab)
    return (1.0 - epsilon) * nll + off_gold * others, nll


# At most this many float32 logits per block of rows on a CPU (16 MB): below
# glibc's 32 MB ceiling for reusing freed memory rather than mapping fresh pages.
PROJECTED_BLOCK_ELEMENTS = 4 * 1024 * 1024
# On a GPU the blocks may take this share of its memory, so that a batch of a
# token budget is one block: the kernels of a block, issued once per batch.
GPU_BLOCK_MEMORY_SHARE = 1 / 8
# Bytes per logit a block holds: the logits (up to float32), their float32
# log-probabilities, and the gradient's 16-bit copy under autocast.
BLOCK_BYTES_PER_LOGIT = 10


def block_elements(device: torch.device) -> int:
    """Logits per block of the projected loss on ``device``.

    On a GPU a fixed share of its total memory, not of the memory free at the
    moment: the blocks decide the order in which the weight's gradient is
    summed, so the same batch on the same device must always be cut alike
    (a resumed run repeats the uninterrupted one exactly).
    """
    if device.type != "cuda":
        return PROJECTED_BLOCK_ELEMENTS
    memory = torch.cuda.get_device_properties(device).total_memory
    share = int(memory * GPU_BLOCK_MEMORY_SHARE) // BLOCK_BYTES_PER_LOGIT
    return max(PROJECTED_BLOCK_ELEMENTS, share)


def projected_label_smoothed_cross_entropy(
    features: torch.Tensor,
    output_proj: nn.Linear,
    target: torch.Tensor,
    epsilon: float,
    pad_id: int,
    block_rows: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """``label_smoothed_cross_entropy(output_proj(features), ...)`` without the
    (n, T, V) logits: the output projection and the loss run together, a block
    of real (non-pad) positions at a time.

    Same value and gradients as the two steps apart (to float rounding), but
    padding positions are not projected at all, and the logits, their
    log-probabilities and their gradient exist for one block of rows at a
    time (``block_elements`` values: 16 MB on a CPU, on a GPU enough for a
    whole token-budget batch; ``block_rows`` overrides) instead of three
    (n, T, V) tensors: 80 MB each for a 2,500-token batch and an 8,000-word
    vocabulary, which the allocator maps and the kernel zero-fills afresh at
    every step. The gradients of the features, the weight and the bias are
    computed block by block in the forward pass, as the loss is the end of
    the graph; backward scales them.

    Under autocast (bf16) the three matrix products per block run in
    autocast's dtype, as autocast would run the projection and its backward;
    the softmax, the loss and the accumulated gradients stay float32.

    Args:
        features: (n, T, d), what ``output_proj`` maps to logits.
        target: (n, T) ids, ``pad_id`` where there is no token.
    Returns:
        (loss sum, negative log-likelihood sum, number of real tokens), as
        ``label_smoothed_cross_entropy``; the nll sum carries no gradient.
    """
    mask = target != pad_id
    real_target = target[mask]  # its size is the count: no second host sync
    weight = output_proj.weight
    rows = block_rows or max(1, block_elements(features.device) // weight.size(0))
    compute_dtype = autocast_dtype(features.device.type) or weight.dtype
    loss, nll = _ProjectedSmoothedCrossEntropy.apply(
        at_least_float32(features[mask]),
        weight,
        output_proj.bias,
        real_target,
        epsilon,
        rows,
        compute_dtype,
    )
    return loss, nll, real_target.numel()


class _ProjectedSmoothedCrossEntropy(torch.autograd.Function):
    """Forward: (loss sum, nll sum) of ``x W^T + b`` at the given rows, with the
    gradients of x, W and b. Backward: those gradients times the loss's."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx, features, weight, bias, target, epsilon, block_rows, compute_dtype
    ):
        with torch.autocast(features.device.type, enabled=False):
            grads, loss, nll = _projected_loss_and_gradients(
                features, weight, bias, target, epsilon, block_rows, compute_dtype
            )
        ctx.save_for_backward(*grads)
        ctx.has_bias = bias is not None
        ctx.mark_non_differentiable(nll)
        return loss, nll

    @staticmethod
    def backward(ctx, grad_loss, grad_nll):  # type: ignore[override]
        return scaled_gradients(ctx, grad_loss, others=4)


def scaled_gradients(ctx, grad_loss: torch.Tensor, others: int) -> tuple:
    """Backward of a loss whose gradients of (features, weight, bias) were
    saved in forward: them times the loss's gradient, then None for the
    ``others`` inputs that take none."""
    grad_features, grad_weight, grad_bias = ctx.saved_tensors
    bias = grad_bias * grad_loss if ctx.has_bias else None
    return (grad_features * grad_loss, grad_weight * grad_loss, bias) + (None,) * others


def _projected_loss_and_gradients(
    features: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    target: torch.Tensor,
    epsilon: float,
    block_rows: int,
    compute_dtype: torch.dtype,
) -> tuple[tuple[torch.Tensor | None, ...], torch.Tensor, torch.Tensor]:
    """((d/dx, d/dW, d/db), loss sum, nll sum) for logits ``x W^T + b``.

    Per block of rows: ``z = x W^T + b``, ``log p = log_softmax(z)``, of which
    each row keeps ``log p_gold`` and ``Σ_y log p_y``, then its gradient
    ``g = softmax(z) - q`` and ``d/dx = g W``, ``d/dW += g^T x``,
    ``d/db += Σ g``. The loss terms (``smoothed_from_sums``) are computed
    for all rows at once after the blocks: a block issues only the kernels
    that work on its (rows, V) logits.
    """
    n, vocab = features.size(0), weight.size(0)
    off_gold = off_gold_probability(epsilon, vocab)
    on_gold = off_gold - (1.0 - epsilon)  # d loss / d z_gold = p_gold + this
    lowered = compute_dtype != features.dtype
    w = weight.detach().to(compute_dtype)
    w_t = w.t()
    b = None if bias is None else bias.detach().to(compute_dtype)
    inputs = features.to(compute_dtype)  # (n, d), once rather than per block
    grad_features = torch.empty_like(features)
    grad_weight = torch.zeros_like(weight)
    grad_bias = None if bias is None else torch.zeros_like(bias)
    block = min(block_rows, max(n, 1))
    logits_block = features.new_empty(block, vocab, dtype=compute_dtype)
    log_probs_block = features.new_empty(block, vocab)  # float32 at least
    gold = target.unsqueeze(1)  # (n, 1)
    on_gold_column = features.new_full((block, 1), on_gold)
    gold_log_probs = features.new_empty(n, 1)  # log p_gold, row by row
    sum_log_probs = features.new_empty(n) if epsilon > 0.0 else None  # Σ_y log p_y
    for start in range(0, n, block):
        stop = min(start + block, n)
        rows, x, gold_ids = stop - start, inputs[start:stop], gold[start:stop]
        logits = torch.mm(x, w_t, out=logits_block[:rows])
        if b is not None:
            logits += b
        log_probs = torch.log_softmax(
            logits, dim=-1, dtype=features.dtype, out=log_probs_block[:rows]
        )
        torch.gather(log_probs, 1, gold_ids, out=gold_log_probs[start:stop])
        if sum_log_probs is not None:
            torch.sum(log_probs, dim=-1, out=sum_log_probs[start:stop])
        grad = log_probs.exp_()  # softmax(z), then minus the smoothed target
        if off_gold:
            grad.sub_(off_gold)
        grad.scatter_add_(1, gold_ids, on_gold_column[:rows])
        if grad_bias is not None:
            grad_bias += grad.sum(dim=0)
        if lowered:  # the products in compute_dtype, the sums in float32
            grad = grad.to(compute_dtype)
            grad_features[start:stop] = torch.mm(grad, w)
            grad_weight += torch.mm(grad.t(), x)
        else:
            torch.mm(grad, w, out=grad_features[start:stop])
            grad_weight.addmm_(grad.t(), x)
    loss, nll = smoothed_from_sums(
        gold_log_probs.squeeze(1), sum_log_probs, epsilon, vocab
    )
    return (grad_features, grad_weight, grad_bias), loss.sum(), nll.sum()
