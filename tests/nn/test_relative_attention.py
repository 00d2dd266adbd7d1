"""Relative multi-head attention against the formula written as a double
loop over (query, key), the shift trick against direct indexing, cached
memory against one pass over the whole sequence, and positions placed
anywhere (``relative-randomized``) against the same loop."""

import math

import pytest
import torch

from rosetta.nn.positional import sinusoids
from rosetta.nn.relative_attention import (
    RelativeMultiHeadAttention,
    distances,
    placed_position_scores,
    relative_shift,
)

D, HEADS = 8, 2


def attention(seed=0, max_distance=None):
    torch.manual_seed(seed)
    module = RelativeMultiHeadAttention(D, HEADS, max_distance=max_distance).double()
    with torch.no_grad():  # biases that matter: they start at zero otherwise
        module.u.normal_()
        module.v.normal_()
    return module.eval()


def causal(length, remembered):
    """Query i (at position M + i) sees keys 0 .. M + i."""
    keys = torch.arange(remembered + length)
    return keys[None, :] <= remembered + torch.arange(length)[:, None]


def double_loop(module, x, memory, mask, positions=None):
    """score(i, j) = (q_i + u)·k_j + (q_i + v)·W_R R_{M+i−j}, one pair at a
    time; with ``positions`` (n, K), R_{p_{M+i} − p_j}."""
    keys_in = x if memory is None else torch.cat([memory, x], dim=1)
    n, length, _ = x.shape
    remembered = keys_in.size(1) - length
    d_k = D // HEADS
    q = module.q_proj(x).view(n, length, HEADS, d_k)
    k = module.k_proj(keys_in).view(n, -1, HEADS, d_k)
    v = module.v_proj(keys_in).view(n, -1, HEADS, d_k)
    out = torch.zeros(n, length, HEADS, d_k, dtype=x.dtype)
    for b in range(n):
        for h in range(HEADS):
            for i in range(length):
                scores = []
                for j in range(keys_in.size(1)):
                    d = remembered + i - j
                    if positions is not None:
                        d = int(positions[b, remembered + i] - positions[b, j])
                    if module.max_distance is not None:
                        d = max(-module.max_distance, min(module.max_distance, d))
                    r = module.r_proj(sinusoids(torch.tensor([d]), D).double())
                    r = r.view(HEADS, d_k)[h]
                    score = (q[b, i, h] + module.u[h]) @ k[b, j, h]
                    score = score + (q[b, i, h] + module.v[h]) @ r
                    allowed = mask is None or bool(mask[i, j])
                    masked = torch.tensor(-math.inf, dtype=x.dtype)
                    scores.append(score / math.sqrt(d_k) if allowed else masked)
                weights = torch.softmax(torch.stack(scores), dim=0)
                out[b, i, h] = weights @ v[b, :, h]
    return module.out_proj(out.reshape(n, length, D))


@pytest.mark.reference
@pytest.mark.parametrize(
    ("remembered", "masked", "max_distance"),
    [
        (0, False, None),
        (0, True, None),
        (3, True, None),
        (3, False, None),
        (3, True, 2),
    ],
    ids=["bidirectional", "causal", "memory-causal", "memory-both-ways", "clamped"],
)
def test_relative_attention_is_the_double_loop(remembered, masked, max_distance):
    module = attention(max_distance=max_distance)
    torch.manual_seed(1)
    x = torch.randn(2, 4, D, dtype=torch.float64)
    memory = torch.randn(2, remembered, D, dtype=torch.float64) if remembered else None
    mask = causal(4, remembered) if masked else None
    with torch.no_grad():
        keys = x if memory is None else torch.cat([memory, x], 1)
        found, _ = module(x, keys, keys, mask)
        expected = double_loop(module, x, memory, mask)
    torch.testing.assert_close(found, expected, rtol=1e-10, atol=1e-10)


@pytest.mark.reference
def test_the_shift_trick_is_direct_indexing():
    length, keys = 4, 7
    scores = torch.randn(3, length, keys + length - 1)
    direct = torch.stack(
        [
            torch.stack([scores[:, i, j + length - 1 - i] for j in range(keys)], -1)
            for i in range(length)
        ],
        dim=1,
    )
    assert torch.equal(relative_shift(scores), direct)
    assert distances(4, 3, None).tolist() == [6, 5, 4, 3, 2, 1, 0, -1, -2, -3]
    assert distances(4, 3, 2).tolist() == [2, 2, 2, 2, 2, 1, 0, -1, -2, -2]


@pytest.mark.reference
def test_a_segment_with_memory_is_the_whole_sequence_under_the_causal_mask():
    """Distances, not positions: the second segment attending to the first as
    memory computes what one pass over both computes for its positions."""
    module = attention(seed=2)
    torch.manual_seed(3)
    first, second = torch.randn(2, 5, D).double(), torch.randn(2, 3, D).double()
    with torch.no_grad():
        both = torch.cat([first, second], 1)
        whole, _ = module(both, both, both, causal(8, 0))
        segment, _ = module(second, both, both, causal(3, 5))
    torch.testing.assert_close(segment, whole[:, 5:], rtol=1e-12, atol=1e-12)


def test_weights_are_returned_and_sum_to_one_over_allowed_keys():
    module = attention()
    x = torch.randn(1, 3, D, dtype=torch.float64)
    memory = torch.randn(1, 2, D, dtype=torch.float64)
    keys = torch.cat([memory, x], 1)
    _, weights = module(x, keys, keys, causal(3, 2), need_weights=True)
    assert weights.shape == (1, HEADS, 3, 5)
    torch.testing.assert_close(weights.sum(-1), torch.ones(1, HEADS, 3).double())
    assert (weights[..., 0, 3:] == 0).all()  # the first query sees keys 0..2


@pytest.mark.reference
@pytest.mark.parametrize("remembered", [0, 3])
def test_attention_at_placed_positions_is_the_double_loop(remembered):
    module = attention(seed=4)
    torch.manual_seed(5)
    x = torch.randn(2, 4, D, dtype=torch.float64)
    keys = torch.cat([torch.randn(2, remembered, D).double(), x], 1)
    positions = torch.tensor([[0, 3, 4, 9, 20, 21, 40], [2, 5, 6, 7, 30, 31, 33]])
    positions = positions[:, : remembered + 4]
    mask = causal(4, remembered)
    with torch.no_grad():
        q = module.project_query(x)
        k, v = module.project_key_value(keys, keys)
        found, _ = module.attend(q, k, v, mask, positions=positions)
        memory = keys[:, :remembered] if remembered else None
        expected = double_loop(module, x, memory, mask, positions)
    # the loop's sinusoids are the float32 table's; the identity's, float64
    torch.testing.assert_close(found, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.reference
@pytest.mark.parametrize("width", [8, 7])
def test_placed_scores_at_0_1_2_are_the_shifted_ones_and_only_distances_count(width):
    """At positions 0 .. K−1 the identity gives what the shift trick gives;
    moved by any constant, nothing changes (an odd width has one cosine
    fewer than sines)."""
    torch.manual_seed(6)
    module = RelativeMultiHeadAttention(width, 1).double()
    queries = torch.randn(2, 1, 3, width, dtype=torch.float64)
    at = torch.arange(5).expand(2, -1)
    shifted = module.position_scores(queries, 5)
    placed = placed_position_scores(queries, module.r_proj.weight, at[:, 2:], at)
    # the shift trick's sinusoids are the float32 table's; the identity's, float64
    torch.testing.assert_close(placed, shifted, rtol=1e-6, atol=1e-6)
    moved = placed_position_scores(
        queries, module.r_proj.weight, at[:, 2:] + 700, at + 700
    )
    torch.testing.assert_close(moved, placed, rtol=1e-9, atol=1e-9)


def test_clamped_distances_refuse_placed_positions():
    module = attention(max_distance=2)
    q = k = v = torch.zeros(1, HEADS, 3, D // HEADS, dtype=torch.float64)
    with pytest.raises(ValueError, match="max_distance"):
        module.attend(q, k, v, positions=torch.arange(3)[None])


@pytest.mark.parametrize("placed", [False, True])
def test_every_tensor_is_made_on_the_inputs_device(placed):
    """The meta device stands in for a GPU: a tensor made on the CPU and
    mixed with the inputs fails here as it would on CUDA."""
    module = attention().to("meta")
    q = k = v = torch.zeros(1, HEADS, 3, D // HEADS, dtype=torch.float64, device="meta")
    positions = torch.arange(3, device="meta")[None] if placed else None
    out, _ = module.attend(q, k, v, positions=positions)
    assert out.device.type == "meta" and out.shape == (1, 3, D)
