import math

import pytest
import torch
from torch import nn

from rosetta.nn import MultiHeadAttention, scaled_dot_product_attention


def copy_into_torch(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    with torch.no_grad():
        theirs.in_proj_weight.copy_(
            torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight])
        )
        theirs.in_proj_bias.copy_(
            torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias])
        )
        theirs.out_proj.weight.copy_(ours.out_proj.weight)
        theirs.out_proj.bias.copy_(ours.out_proj.bias)


@pytest.mark.reference
def test_sdpa_matches_the_formula_by_hand():
    q = torch.tensor([[[1.0, 0.0]]])
    k = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    v = torch.tensor([[[10.0], [20.0]]])
    out, weights = scaled_dot_product_attention(q, k, v)
    w0 = math.exp(1 / math.sqrt(2)) / (math.exp(1 / math.sqrt(2)) + 1)
    assert weights[0, 0].tolist() == pytest.approx([w0, 1 - w0])
    assert out.item() == pytest.approx(10 * w0 + 20 * (1 - w0))


def test_masked_positions_get_zero_weight():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 4)
    mask = torch.tensor([True, True, False, True, False])
    _, weights = scaled_dot_product_attention(q, k, v, mask)
    assert torch.all(weights[..., ~mask] == 0)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 3))


@pytest.mark.reference
@pytest.mark.parametrize("masked", [False, True])
def test_multi_head_attention_equals_torch(masked):
    torch.manual_seed(0)
    d, h, n, lq, lk = 32, 4, 3, 5, 7
    ours = MultiHeadAttention(d, h).eval()
    theirs = nn.MultiheadAttention(d, h, batch_first=True).eval()
    copy_into_torch(ours, theirs)
    query, key = torch.randn(n, lq, d), torch.randn(n, lk, d)
    value = torch.randn(n, lk, d)
    lengths = torch.tensor([7, 4, 1])
    key_ok = torch.arange(lk)[None, :] < lengths[:, None]  # (n, lk) True = real
    mask = key_ok[:, None, None, :] if masked else None
    for fused in (True, False):
        ours.fused = fused
        out, _ = ours(query, key, value, mask)
        expected, _ = theirs(
            query, key, value, key_padding_mask=~key_ok if masked else None
        )
        assert (out - expected).abs().max() <= 1e-5


@pytest.mark.reference
def test_causal_mask_equals_torch_attn_mask():
    torch.manual_seed(1)
    d, h, length = 16, 2, 6
    ours = MultiHeadAttention(d, h).eval()
    theirs = nn.MultiheadAttention(d, h, batch_first=True).eval()
    copy_into_torch(ours, theirs)
    x = torch.randn(2, length, d)
    causal = torch.ones(length, length, dtype=torch.bool).tril()
    out, _ = ours(x, x, x, causal)
    expected, _ = theirs(x, x, x, attn_mask=~causal)
    assert (out - expected).abs().max() <= 1e-5


def test_fast_and_reference_paths_agree_and_weights_are_returned():
    torch.manual_seed(2)
    attention = MultiHeadAttention(24, 3).eval()
    x, memory = torch.randn(4, 5, 24), torch.randn(4, 9, 24)
    mask = torch.rand(4, 1, 5, 9) > 0.3
    mask[..., 0] = True
    fast, none = attention(x, memory, memory, mask)
    slow, weights = attention(x, memory, memory, mask, need_weights=True)
    assert none is None and weights.shape == (4, 3, 5, 9)
    assert (fast - slow).abs().max() <= 1e-5


def test_heads_must_divide_width():
    with pytest.raises(ValueError, match="must divide"):
        MultiHeadAttention(10, 3)
