"""The one-token step on packed weights against the decoder layers' own path."""

from unittest import mock

import pytest
import torch
from torch import nn

from rosetta.families.transformer.fast import packed as packed_module
from rosetta.families.transformer.fast.packed import (
    PackedTransformerDecoder,
    pack_for_inference,
)
from rosetta.families.transformer.fast.step import (
    PackedVocabulary,
    pack_linear,
    pack_vocabulary,
)
from rosetta.runtime.precision import quantize_int8
from tests.families.transformer.test_model import random_batch, tiny_model


def step_log_probs(model, src, src_mask, tgt, index=None, precision=None):
    """Log-probabilities of each step of teacher-fed one-token decoding."""
    autocast = torch.autocast("cpu", dtype=precision, enabled=precision is not None)
    spy = mock.patch.object(
        packed_module, "decoder_step", wraps=packed_module.decoder_step
    )
    with torch.no_grad(), autocast, spy as packed_step:
        state = model.init_state(model.encode(src, src_mask), src_mask)
        if index is not None:  # beams: rows share their sentence's memory
            state = state.reorder(index)
        rows = tgt if index is None else tgt[index]
        steps = []
        for t in range(rows.size(1)):
            log_probs, state = model.step(rows[:, t], state)
            steps.append(log_probs)
    return torch.stack(steps, 1), packed_step.called


def decode_both_ways(model, src, src_mask, tgt, index=None, precision=None):
    """Log-probabilities of each step, packed and through the layers."""
    packed_model = pack_for_inference(model, precision)
    packed, ran = step_log_probs(packed_model, src, src_mask, tgt, index, precision)
    assert ran, "the packed step was not taken"
    layers, ran = step_log_probs(model, src, src_mask, tgt, index, precision)
    assert not ran, "the model itself took the packed step"
    return packed, layers


@pytest.mark.reference
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("index", [None, [0, 0, 0, 1, 1, 1, 2, 2, 2], [2, 0, 0], [1]])
def test_packed_step_equals_the_layers(norm_first, index):
    """At 1, 3 and 9 rows: the vocabulary product's layouts."""
    model = tiny_model(norm_first=norm_first)
    src, src_mask, tgt = random_batch()
    index = None if index is None else torch.tensor(index)
    packed, layers = decode_both_ways(model, src, src_mask, tgt, index)
    assert (packed - layers).abs().max() <= 1e-5


@pytest.mark.reference
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("index", [None, [0, 0, 0, 1, 1, 1, 2, 2, 2]])
def test_under_bf16_autocast_the_packed_step_computes_what_the_layers_do(
    norm_first, index
):
    """Weights packed in bf16 once, as autocast casts them at every product;
    the residual stream and the norms stay float32, as under autocast."""
    model = tiny_model(norm_first=norm_first)
    src, src_mask, tgt = random_batch()
    index = None if index is None else torch.tensor(index)
    packed, layers = decode_both_ways(model, src, src_mask, tgt, index, torch.bfloat16)
    vocabulary = pack_for_inference(model, torch.bfloat16).output_proj.vocabulary
    assert (
        vocabulary.weight.dtype
        == vocabulary.transposed.weight_t.dtype
        == torch.bfloat16
    )
    assert (packed - layers).abs().max() <= 2e-2  # bf16 rounding, in another order
    full, _ = decode_both_ways(model, src, src_mask, tgt, index)
    assert (packed - full).abs().max() > 1e-4  # it did compute in bf16


@pytest.mark.reference
def test_many_rows_take_the_plain_vocabulary_product():
    model = tiny_model()
    src, src_mask, tgt = random_batch()
    rows = torch.arange(3).repeat_interleave(PackedVocabulary.TRANSPOSED_ROWS[-1])
    packed, layers = decode_both_ways(model, src, src_mask, tgt[:, :3], rows)
    assert (packed - layers).abs().max() <= 1e-5


TRANSPOSED = PackedVocabulary.TRANSPOSED_ROWS


@pytest.mark.reference
@pytest.mark.parametrize(
    "rows", [1, 2, TRANSPOSED[0], TRANSPOSED[-1], TRANSPOSED[-1] + 1]
)
@pytest.mark.parametrize("bias", [False, True])
def test_the_vocabulary_product_equals_the_linear_layer_at_every_row_count(rows, bias):
    torch.manual_seed(0)
    output_proj = nn.Linear(16, 50, bias=bias)
    x = torch.randn(rows, 16)
    with torch.no_grad():
        got = pack_vocabulary(output_proj, torch.float32)(x)
        assert got.shape == (rows, 50) and got.is_contiguous()
        assert torch.allclose(got, output_proj(x), atol=1e-5)


def test_pack_linear_puts_outputs_side_by_side():
    torch.manual_seed(0)
    a, b = nn.Linear(8, 3), nn.Linear(8, 5)
    x = torch.randn(4, 8)
    with torch.no_grad():
        packed = pack_linear(a, b)
        assert packed.weight_t.shape == (8, 8) and packed.weight_t.is_contiguous()
        assert torch.allclose(packed(x), torch.cat([a(x), b(x)], 1), atol=1e-6)
    with pytest.raises(ValueError, match="all or none"):
        pack_linear(a, nn.Linear(8, 2, bias=False))


def test_only_a_transformer_with_plain_layers_is_packed():
    model = tiny_model()
    packed = pack_for_inference(model)
    assert isinstance(packed.decoder, PackedTransformerDecoder)
    assert pack_for_inference(model, torch.bfloat16).decoder.packed.dtype == (
        torch.bfloat16
    )
    quantized = quantize_int8(model)  # int8 layers have their own fast path
    assert pack_for_inference(quantized) is quantized
    model.decoder.layers[1].cross_attn.fused = False  # the reference attention
    assert pack_for_inference(model) is model


def test_a_step_in_another_dtype_than_packed_goes_through_the_layers():
    """Packed for float32, run under bf16 autocast (and the reverse): the
    layers compute it, as the model itself would."""
    model = tiny_model()
    src, src_mask, tgt = random_batch()
    for packed_dtype, run_dtype in ((None, torch.bfloat16), (torch.bfloat16, None)):
        packed = pack_for_inference(model, packed_dtype)
        got, ran = step_log_probs(packed, src, src_mask, tgt, precision=run_dtype)
        want, _ = step_log_probs(model, src, src_mask, tgt, precision=run_dtype)
        assert not ran and torch.equal(got, want)
