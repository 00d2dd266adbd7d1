"""The best tokens of every row of a (rows, vocabulary) score matrix, fast.

Search picks a few tokens out of thousands at every step. ``torch.topk`` and
``torch.argmax`` walk each row element by element, which on a CPU costs more
than a vectorised pass. Both functions here first take the maximum of every
block of ``BLOCK`` consecutive tokens (one vectorised reduction), then look
only inside the best blocks: the ``k`` largest entries of a row always lie in
the ``k`` blocks with the largest maxima, because every other block's maximum
is beaten by ``k`` entries from different blocks. Rows whose width is not a
multiple of ``BLOCK`` take the plain torch path.
"""

from __future__ import annotations

import torch

BLOCK = 64


def _blocks(scores: torch.Tensor, k: int) -> torch.Tensor | None:
    """(n, V) -> (n, V / BLOCK, BLOCK), or None where blocking does not apply."""
    n, width = scores.shape
    if width % BLOCK or width < 4 * BLOCK * k:
        return None
    return scores.view(n, width // BLOCK, BLOCK)


def top_k_rows(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``scores.topk(k, dim=1)`` for a contiguous (n, V) matrix: values and
    indices, largest first (among equal values either index may come)."""
    blocks = _blocks(scores, k)
    if blocks is None:
        return scores.topk(k, dim=1)
    best_blocks = blocks.amax(dim=2).topk(k, dim=1).indices  # (n, k)
    inside = blocks.gather(1, best_blocks.unsqueeze(-1).expand(-1, -1, BLOCK))
    values, position = inside.flatten(1).topk(k, dim=1)  # among k*BLOCK
    block = best_blocks.gather(1, torch.div(position, BLOCK, rounding_mode="floor"))
    return values, block * BLOCK + position % BLOCK


def argmax_rows(scores: torch.Tensor) -> torch.Tensor:
    """``scores.argmax(dim=1)`` for a contiguous (n, V) matrix, ties included:
    the first block holding the row's maximum, then the first position in it."""
    blocks = _blocks(scores, 1)
    if blocks is None:
        return scores.argmax(dim=1)
    block = blocks.amax(dim=2).argmax(dim=1)  # (n,)
    inside = blocks[torch.arange(blocks.size(0), device=scores.device), block]
    return block * BLOCK + inside.argmax(dim=1)
