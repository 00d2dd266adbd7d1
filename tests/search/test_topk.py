"""Block-maximum top-k and argmax against torch.topk / torch.argmax."""

import pytest
import torch

from rosetta.search.topk import BLOCK, argmax_rows, top_k_rows

pytestmark = pytest.mark.reference


def score_matrices():
    """Log-softmax rows, rows with many ties, -inf entries, and best tokens
    crowded into one block or spread one per block."""
    generator = torch.Generator().manual_seed(0)
    random = torch.randn(40, 125 * BLOCK, generator=generator).log_softmax(-1)
    ties = torch.randint(0, 4, (40, 64 * BLOCK), generator=generator).float()
    masked = random.clone()
    masked[:, ::3] = float("-inf")
    crowded = torch.full((6, 32 * BLOCK), -5.0)
    crowded[:, 10 * BLOCK : 10 * BLOCK + 8] = torch.arange(8.0)  # all in block 10
    spread = torch.full((6, 32 * BLOCK), -5.0)
    spread[:, torch.arange(8) * BLOCK + 3] = torch.arange(8.0)  # one per block
    return [random, ties, masked, crowded, spread]


@pytest.mark.parametrize("matrix", range(5))
@pytest.mark.parametrize("k", [1, 2, 5, 8])
def test_top_k_rows_equals_torch_topk(matrix, k):
    scores = score_matrices()[matrix]
    values, indices = top_k_rows(scores, k)
    expected = scores.topk(k, dim=1).values
    assert torch.equal(values, expected)
    # indices point at those values, and at k different tokens of each row
    assert torch.equal(scores.gather(1, indices), values)
    assert all(len(set(row)) == k for row in indices.tolist())


@pytest.mark.parametrize("matrix", range(5))
def test_argmax_rows_equals_torch_argmax_ties_included(matrix):
    scores = score_matrices()[matrix]
    assert torch.equal(argmax_rows(scores), scores.argmax(dim=1))


def test_widths_that_do_not_block_fall_back_to_torch():
    scores = torch.randn(3, 8 * BLOCK + 5)
    assert torch.equal(top_k_rows(scores, 4)[1], scores.topk(4, dim=1).indices)
    assert torch.equal(argmax_rows(scores), scores.argmax(dim=1))
    small = torch.randn(3, 2 * BLOCK)  # fewer blocks than are worth it
    assert torch.equal(top_k_rows(small, 3)[0], small.topk(3, dim=1).values)
