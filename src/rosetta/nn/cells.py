"""Recurrent cells written from their equations, for a batch of row vectors
``X`` (n, I) and the previous hidden state ``H`` (n, H):

- tanh RNN: ``H' = tanh(X W_xh + H W_hh + b_h)``;
- GRU: reset gate ``R = σ(X W_xr + H W_hr + b_r)``, update gate
  ``Z = σ(X W_xz + H W_hz + b_z)``, candidate ``H~`` (below), and
  ``H' = Z ⊙ H + (1 − Z) ⊙ H~``;
- LSTM: input, forget and output gates ``I, F, O = σ(X W_x* + H W_h* + b_*)``,
  candidate ``C~ = tanh(X W_xc + H W_hc + b_c)``, memory
  ``C' = F ⊙ C + I ⊙ C~`` and ``H' = O ⊙ tanh(C')``.

Each cell has a functional form that takes its weights explicitly (the ``RNN``
layer uses it over time) and a module whose constructor, call and parameter
layout mirror ``torch.nn.RNNCell`` / ``GRUCell`` / ``LSTMCell``: ``weight_ih``
(G*H, I), ``weight_hh`` (G*H, H), ``bias_ih`` and ``bias_hh`` (G*H), with the
gates stacked in torch's order (GRU: r, z, n; LSTM: i, f, g, o). Weights move
between Rosetta and torch with ``load_state_dict``.

Row vectors multiply weights on the right (``X W``); torch stores
weights as (out, in), so ``X W`` is ``x @ weight.T`` here.

The GRU comes in two forms that differ in where the reset gate acts:

- ``"cho"`` (Cho et al. 2014, the default):
  ``H~ = tanh(X W_xh + (R ⊙ H) W_hh + b_h)``;
- ``"torch"`` (torch and cuDNN):
  ``H~ = tanh(X W_in + b_in + R ⊙ (H W_hn + b_hn))``.

The fused kernels compute the torch form only.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import nn

GRUVariant = Literal["cho", "torch"]
LSTMState = tuple[torch.Tensor, torch.Tensor]


def rnn_tanh_step(
    input_gates: torch.Tensor,
    h: torch.Tensor,
    weight_hh: torch.Tensor,
    bias_hh: torch.Tensor | None,
) -> torch.Tensor:
    """``H_t = tanh(X_t W_xh + b_xh + H_{t-1} W_hh + b_hh)``.

    ``input_gates`` is the input's share, ``X_t W_xh + b_xh`` (n, H), computed
    for all time steps at once by the caller.
    """
    return torch.tanh(input_gates + nn.functional.linear(h, weight_hh, bias_hh))


def gru_step(
    input_gates: torch.Tensor,
    h: torch.Tensor,
    weight_hh: torch.Tensor,
    bias_hh: torch.Tensor | None,
    variant: GRUVariant = "cho",
) -> torch.Tensor:
    """One GRU step; ``input_gates`` (n, 3H) is ``X_t W_x* + b_x*`` for r, z, n."""
    x_r, x_z, x_n = input_gates.chunk(3, dim=-1)
    w_hr, w_hz, w_hn = weight_hh.chunk(3, dim=0)
    b_hr, b_hz, b_hn = (None,) * 3 if bias_hh is None else bias_hh.chunk(3)
    linear = nn.functional.linear
    r = torch.sigmoid(x_r + linear(h, w_hr, b_hr))  # R_t = σ(X W_xr + H W_hr + b_r)
    z = torch.sigmoid(x_z + linear(h, w_hz, b_hz))  # Z_t = σ(X W_xz + H W_hz + b_z)
    if variant == "cho":  # H~_t = tanh(X W_xh + (R_t ⊙ H_{t-1}) W_hh + b_h)
        candidate = torch.tanh(x_n + linear(r * h, w_hn, b_hn))
    elif variant == "torch":  # H~_t = tanh(X W_in + b_in + R_t ⊙ (H W_hn + b_hn))
        candidate = torch.tanh(x_n + r * linear(h, w_hn, b_hn))
    else:
        raise ValueError(f"unknown GRU variant {variant!r}: use 'cho' or 'torch'")
    return z * h + (1 - z) * candidate  # H_t = Z ⊙ H_{t-1} + (1 - Z) ⊙ H~_t


def lstm_step(
    input_gates: torch.Tensor,
    state: LSTMState,
    weight_hh: torch.Tensor,
    bias_hh: torch.Tensor | None,
) -> LSTMState:
    """One LSTM step; ``input_gates`` (n, 4H) is ``X_t W_x* + b_x*`` for i, f, g, o."""
    h, c = state
    gates = input_gates + nn.functional.linear(h, weight_hh, bias_hh)
    i, f, g, o = gates.chunk(4, dim=-1)
    i, f, o = torch.sigmoid(i), torch.sigmoid(f), torch.sigmoid(o)  # I, F, O gates
    c = f * c + i * torch.tanh(g)  # C_t = F ⊙ C_{t-1} + I ⊙ C~_t
    return torch.tanh(c) * o, c  # H_t = O ⊙ tanh(C_t)


class _Cell(nn.Module):
    """Weights in torch's layout, initialised as torch does: U(-1/√H, 1/√H)."""

    gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        rows = self.gates * hidden_size
        self.weight_ih = nn.Parameter(torch.empty(rows, input_size))
        self.weight_hh = nn.Parameter(torch.empty(rows, hidden_size))
        self.bias_ih = nn.Parameter(torch.empty(rows)) if bias else None
        self.bias_hh = nn.Parameter(torch.empty(rows)) if bias else None
        bound = 1.0 / math.sqrt(hidden_size)
        for parameter in self.parameters():
            nn.init.uniform_(parameter, -bound, bound)

    def input_gates(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 2 or x.size(1) != self.input_size:
            raise ValueError(
                f"{type(self).__name__} expects input (batch, {self.input_size}), "
                f"got {tuple(x.shape)}"
            )
        return nn.functional.linear(x, self.weight_ih, self.bias_ih)

    def zeros(self, x: torch.Tensor) -> torch.Tensor:
        return x.new_zeros(x.size(0), self.hidden_size)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}"


class RNNCell(_Cell):
    """Elman cell: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``.

    Shape: x (n, I), h (n, H) or None for zeros -> h' (n, H).
    """

    def forward(self, x: torch.Tensor, h: torch.Tensor | None = None) -> torch.Tensor:
        h = self.zeros(x) if h is None else h
        return rnn_tanh_step(self.input_gates(x), h, self.weight_hh, self.bias_hh)


class GRUCell(_Cell):
    """Gated recurrent unit; ``variant`` picks where the reset gate acts.

    Shape: x (n, I), h (n, H) or None for zeros -> h' (n, H).
    """

    gates = 3

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        variant: GRUVariant = "cho",
    ):
        super().__init__(input_size, hidden_size, bias)
        if variant not in ("cho", "torch"):
            raise ValueError(f"unknown GRU variant {variant!r}: use 'cho' or 'torch'")
        self.variant = variant

    def forward(self, x: torch.Tensor, h: torch.Tensor | None = None) -> torch.Tensor:
        h = self.zeros(x) if h is None else h
        return gru_step(
            self.input_gates(x), h, self.weight_hh, self.bias_hh, self.variant
        )

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, variant={self.variant!r}"


class LSTMCell(_Cell):
    """Long short-term memory cell.

    Shape: x (n, I), (h, c) each (n, H) or None for zeros -> (h', c').
    """

    gates = 4

    def forward(self, x: torch.Tensor, state: LSTMState | None = None) -> LSTMState:
        if state is None:
            state = (self.zeros(x), self.zeros(x))
        return lstm_step(self.input_gates(x), state, self.weight_hh, self.bias_hh)
