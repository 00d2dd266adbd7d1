"""The RNN layer over padded batches, against torch.nn.GRU/LSTM on packed input."""

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from rosetta.nn import RNN

IN, H, T = 5, 6, 7
LENGTHS = torch.tensor([7, 3, 5, 1])


def padded_batch(seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(len(LENGTHS), T, IN, generator=generator)
    valid = torch.arange(T)[None, :] < LENGTHS[:, None]
    return x * valid[..., None], valid


def torch_layer(cell, layers=2, bidirectional=True):
    kind = {"gru": nn.GRU, "lstm": nn.LSTM, "rnn": nn.RNN}[cell]
    return kind(IN, H, layers, batch_first=True, bidirectional=bidirectional)


def run_torch(reference, x, state=None):
    packed = pack_padded_sequence(x, LENGTHS, batch_first=True, enforce_sorted=False)
    output, final = reference(packed, state)
    return pad_packed_sequence(output, batch_first=True, total_length=T)[0], final


def assert_same(got, want, valid, atol=1e-6):
    (out, final), (want_out, want_final) = got, want
    torch.testing.assert_close(out * valid[..., None], want_out, atol=atol, rtol=0)
    if isinstance(final, tuple):
        for a, b in zip(final, want_final, strict=True):
            torch.testing.assert_close(a, b, atol=atol, rtol=0)
    else:
        torch.testing.assert_close(final, want_final, atol=atol, rtol=0)


@pytest.mark.reference
@pytest.mark.parametrize("impl", ["reference", "fused"])
@pytest.mark.parametrize("cell", ["gru", "lstm", "rnn"])
def test_two_layer_bidirectional_equals_torch_on_packed_input(cell, impl):
    torch.manual_seed(0)
    reference = torch_layer(cell)
    ours = RNN(cell, IN, H, 2, True, impl=impl)
    ours.load_state_dict(reference.state_dict())  # the same names and shapes
    assert set(ours.state_dict()) == set(reference.state_dict())
    x, valid = padded_batch()
    assert_same(ours(x, LENGTHS), run_torch(reference, x), valid)


@pytest.mark.reference
@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_initial_state_is_used_as_torch_uses_it(cell):
    torch.manual_seed(0)
    reference = torch_layer(cell)
    ours = RNN(cell, IN, H, 2, True, impl="reference")
    ours.load_state_dict(reference.state_dict())
    x, valid = padded_batch()
    h0 = torch.randn(4, len(LENGTHS), H)
    state = (h0, torch.randn_like(h0)) if cell == "lstm" else h0
    assert_same(ours(x, LENGTHS, state), run_torch(reference, x, state), valid)


@pytest.mark.reference
@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_reference_and_fused_paths_agree_with_gradients(cell):
    torch.manual_seed(0)
    reference = RNN(cell, IN, H, 2, True, impl="reference")
    fused = RNN(cell, IN, H, 2, True, impl="fused")
    fused.load_state_dict(reference.state_dict())
    x, valid = padded_batch()
    outputs = []
    for layer in (reference, fused):
        out, _ = layer(x, LENGTHS)
        (out * valid[..., None]).pow(2).sum().backward()
        outputs.append(out)
    torch.testing.assert_close(outputs[0], outputs[1], atol=1e-6, rtol=0)
    for (name, a), b in zip(
        reference.named_parameters(), fused.parameters(), strict=True
    ):
        torch.testing.assert_close(a.grad, b.grad, atol=1e-5, rtol=0, msg=name)


@pytest.mark.parametrize("impl", ["reference", "fused"])
def test_padding_never_changes_a_sequence(impl):
    """The same sequences, padded with garbage to a longer length, give the same
    outputs at real positions and the same final states."""
    torch.manual_seed(0)
    layer = RNN("lstm", IN, H, 2, True, impl=impl).eval()
    x, valid = padded_batch()
    longer = torch.cat([x, torch.randn(len(LENGTHS), 4, IN)], dim=1)
    longer[:, :T][~valid] = torch.randn(int((~valid).sum()), IN)
    out, (h, c) = layer(x, LENGTHS)
    out_long, (h_long, c_long) = layer(longer, LENGTHS)
    torch.testing.assert_close(
        out_long[:, :T] * valid[..., None], out * valid[..., None]
    )
    assert out_long[:, T:].abs().max() == 0  # padded steps output zeros
    torch.testing.assert_close(h_long, h)
    torch.testing.assert_close(c_long, c)


@pytest.mark.reference
def test_cho_gru_layer_runs_the_cho_cell():
    """Layer with gru_variant='cho' = Cho et al.'s cell applied step by step."""
    from rosetta.nn import GRUCell

    torch.manual_seed(0)
    layer = RNN("gru", IN, H, 1, False, gru_variant="cho", impl="reference")
    cell = GRUCell(IN, H, variant="cho")
    cell.load_state_dict(
        {k.removesuffix("_l0"): v for k, v in layer.state_dict().items()}
    )
    x, _ = padded_batch()
    h = torch.zeros(len(LENGTHS), H)
    for t in range(T):
        h = torch.where((t < LENGTHS)[:, None], cell(x[:, t], h), h)
    _, final = layer(x, LENGTHS)
    torch.testing.assert_close(final[0], h, atol=1e-6, rtol=0)


def test_fused_refuses_the_cho_gru_and_bad_arguments():
    with pytest.raises(ValueError, match="torch form of the GRU"):
        RNN("gru", IN, H, gru_variant="cho", impl="fused")
    with pytest.raises(ValueError, match="unknown cell"):
        RNN("tanh", IN, H)
    with pytest.raises(ValueError, match=r"expects input \(batch, time, 5\)"):
        RNN("gru", IN, H)(torch.randn(2, 3, 4))


def test_fused_template_is_not_saved():
    layer = RNN("gru", IN, H, 2, True)
    assert all(not name.startswith("_") for name in layer.state_dict())
    assert len(layer.state_dict()) == 16
