"""Recurrent cells against torch.nn and against their equations in float64."""

import pytest
import torch
from torch import nn

from rosetta.nn import GRUCell, LSTMCell, RNNCell

IN, H, N = 5, 7, 4


def copy_weights(ours: nn.Module, theirs: nn.Module) -> None:
    """Our cells use torch's names and shapes: load_state_dict both ways."""
    ours.load_state_dict(theirs.state_dict())
    theirs.load_state_dict(ours.state_dict())


@pytest.mark.reference
@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (lambda: RNNCell(IN, H), lambda: nn.RNNCell(IN, H)),
        (lambda: GRUCell(IN, H, variant="torch"), lambda: nn.GRUCell(IN, H)),
    ],
    ids=["rnn", "gru-torch-form"],
)
def test_cell_equals_torch(ours, theirs):
    torch.manual_seed(0)
    cell, reference = ours(), theirs()
    copy_weights(cell, reference)
    x, h = torch.randn(N, IN), torch.randn(N, H)
    torch.testing.assert_close(cell(x, h), reference(x, h), atol=1e-6, rtol=0)
    torch.testing.assert_close(cell(x), reference(x), atol=1e-6, rtol=0)


@pytest.mark.reference
def test_lstm_cell_equals_torch():
    torch.manual_seed(0)
    cell, reference = LSTMCell(IN, H), nn.LSTMCell(IN, H)
    copy_weights(cell, reference)
    x, h, c = torch.randn(N, IN), torch.randn(N, H), torch.randn(N, H)
    for got, want in zip(cell(x, (h, c)), reference(x, (h, c)), strict=True):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=0)


def spec_gru_step(x, h, cell):
    """The cell equations in float64 with row-vector weights ``X W``.

    ``W_x* = weight_ih[gate].T``; the equations' single bias ``b_*`` is the sum of
    torch's two biases.
    """
    w_x = [w.double().T for w in cell.weight_ih.chunk(3)]
    w_h = [w.double().T for w in cell.weight_hh.chunk(3)]
    b = [
        bi.double() + bh.double()
        for bi, bh in zip(cell.bias_ih.chunk(3), cell.bias_hh.chunk(3), strict=True)
    ]
    x, h = x.double(), h.double()
    r = torch.sigmoid(x @ w_x[0] + h @ w_h[0] + b[0])
    z = torch.sigmoid(x @ w_x[1] + h @ w_h[1] + b[1])
    h_tilde = torch.tanh(x @ w_x[2] + (r * h) @ w_h[2] + b[2])
    return z * h + (1 - z) * h_tilde


@pytest.mark.reference
def test_cho_gru_equals_the_equations_in_float64():
    torch.manual_seed(0)
    cell = GRUCell(IN, H)  # Cho et al.'s form is the default
    assert cell.variant == "cho"
    x, h = torch.randn(N, IN), torch.randn(N, H)
    got = cell(x, h)
    torch.testing.assert_close(
        got.double(), spec_gru_step(x, h, cell), atol=1e-6, rtol=0
    )
    # and it is a different function from torch's form
    torch_form = GRUCell(IN, H, variant="torch")
    torch_form.load_state_dict(cell.state_dict())
    assert (torch_form(x, h) - got).abs().max() > 1e-4


def spec_lstm_step(x, h, c, cell):
    """The LSTM equations in float64; torch's gate order is i, f, g (= C~), o."""
    w_x = [w.double().T for w in cell.weight_ih.chunk(4)]
    w_h = [w.double().T for w in cell.weight_hh.chunk(4)]
    b = [
        bi.double() + bh.double()
        for bi, bh in zip(cell.bias_ih.chunk(4), cell.bias_hh.chunk(4), strict=True)
    ]
    x, h, c = x.double(), h.double(), c.double()
    gate = [x @ w_x[k] + h @ w_h[k] + b[k] for k in range(4)]
    i, f, o = torch.sigmoid(gate[0]), torch.sigmoid(gate[1]), torch.sigmoid(gate[3])
    c = f * c + i * torch.tanh(gate[2])
    return o * torch.tanh(c), c


@pytest.mark.reference
def test_lstm_cell_equals_the_equations_in_float64():
    torch.manual_seed(1)
    cell = LSTMCell(IN, H)
    x, h, c = torch.randn(N, IN), torch.randn(N, H), torch.randn(N, H)
    for got, want in zip(cell(x, (h, c)), spec_lstm_step(x, h, c, cell), strict=True):
        torch.testing.assert_close(got.double(), want, atol=1e-6, rtol=0)


@pytest.mark.reference
@pytest.mark.parametrize("kind", ["rnn", "gru-torch", "gru-cho", "lstm"])
def test_cell_gradients_pass_gradcheck(kind):
    torch.manual_seed(0)
    make = {
        "rnn": lambda: RNNCell(3, 4),
        "gru-torch": lambda: GRUCell(3, 4, variant="torch"),
        "gru-cho": lambda: GRUCell(3, 4, variant="cho"),
        "lstm": lambda: LSTMCell(3, 4),
    }[kind]
    cell = make().double()
    x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    h = torch.randn(2, 4, dtype=torch.float64, requires_grad=True)
    c = torch.randn(2, 4, dtype=torch.float64, requires_grad=True)
    names, weights = zip(*cell.named_parameters(), strict=True)

    def run(x, h, c, *params):
        state = (h, c) if kind == "lstm" else h
        out = torch.func.functional_call(
            cell, dict(zip(names, params, strict=True)), (x, state)
        )
        return out if kind == "lstm" else (out,)

    inputs = (x, h, c, *(w.detach().clone().requires_grad_() for w in weights))
    assert torch.autograd.gradcheck(run, inputs)


@pytest.mark.reference
@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_cell_gradients_equal_torch(kind):
    torch.manual_seed(0)
    if kind == "gru":
        cell, reference = GRUCell(IN, H, variant="torch"), nn.GRUCell(IN, H)
    else:
        cell, reference = LSTMCell(IN, H), nn.LSTMCell(IN, H)
    copy_weights(cell, reference)
    x = torch.randn(N, IN)
    for module in (cell, reference):
        out = module(x)
        (out[0] if isinstance(out, tuple) else out).pow(2).sum().backward()
    for (name, ours), theirs in zip(
        cell.named_parameters(), reference.parameters(), strict=True
    ):
        torch.testing.assert_close(ours.grad, theirs.grad, atol=1e-6, rtol=0, msg=name)


def test_cells_reject_wrong_input_width_and_variant():
    with pytest.raises(ValueError, match=r"expects input \(batch, 5\)"):
        GRUCell(5, 7)(torch.randn(2, 4))
    with pytest.raises(ValueError, match="unknown GRU variant"):
        GRUCell(5, 7, variant="cudnn")
