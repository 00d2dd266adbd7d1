"""A deep, optionally bidirectional recurrent layer over padded batches.

``RNN(cell, input_size, hidden_size, num_layers, bidirectional, dropout)`` holds
its parameters under torch's names (``weight_ih_l{k}``, ``weight_hh_l{k}``,
``bias_ih_l{k}``, ``bias_hh_l{k}``, with ``_reverse`` for the backward
direction), so a state dict moves to and from ``torch.nn.GRU`` / ``LSTM`` /
``RNN`` unchanged. Tensors are batch-first.

Two implementations compute the same function:

- ``impl="reference"`` runs the cells of ``rosetta.nn.cells`` step by step. The
  input's share of every gate is one matrix product over all time steps; only
  the recurrent product is inside the loop. At a padded step (``t >= length``)
  the state is carried over unchanged, so padding never changes a sequence's
  state; the backward direction runs from the last position down, so it starts
  from the initial state at each sequence's own last real token.
- ``impl="fused"`` calls torch's fused kernels (oneDNN on CPU, cuDNN on GPU)
  with these same parameters on a packed sequence. It computes the torch form
  of the GRU only.

Deep RNN: layer ``l`` reads layer ``l-1``'s hidden states (``H^(0) = X``), with
dropout between layers. Bidirectional: the two directions' states are
concatenated (n, T, 2H) and feed the next layer.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import nn
from torch.func import functional_call
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from rosetta.nn.cells import GRUVariant, gru_step, lstm_step, rnn_tanh_step

CellKind = Literal["rnn", "gru", "lstm"]
Impl = Literal["reference", "fused"]
# h (layers*directions, n, H), or (h, c) for the LSTM, as torch returns it
RecurrentState = torch.Tensor | tuple[torch.Tensor, torch.Tensor]

_GATES = {"rnn": 1, "gru": 3, "lstm": 4}
_TORCH_LAYERS = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}


class RNN(nn.Module):
    """Stacked recurrent layers of one cell kind.

    Args:
        cell: ``"rnn"`` (tanh), ``"gru"`` or ``"lstm"``.
        gru_variant: where the GRU's reset gate acts (see ``rosetta.nn.cells``).
        impl: ``"reference"`` (the cells, step by step) or ``"fused"``.

    Shape:
        x (n, T, I); lengths (n,) valid lengths or None (all T); initial state
        as torch's (L*D, n, H) or None for zeros
        -> output (n, T, D*H), zero at padded steps; final state like the
        initial one, taken at each sequence's last real step.
    """

    def __init__(
        self,
        cell: CellKind,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bidirectional: bool = False,
        dropout: float = 0.0,
        *,
        bias: bool = True,
        gru_variant: GRUVariant = "torch",
        impl: Impl = "fused",
    ):
        super().__init__()
        if cell not in _GATES:
            raise ValueError(f"unknown cell {cell!r}: use 'rnn', 'gru' or 'lstm'")
        if impl not in ("reference", "fused"):
            raise ValueError(f"unknown impl {impl!r}: use 'reference' or 'fused'")
        if impl == "fused" and cell == "gru" and gru_variant != "torch":
            raise ValueError(
                "the fused kernels compute the torch form of the GRU: "
                "use gru_variant='torch' or impl='reference'"
            )
        self.cell, self.impl, self.gru_variant = cell, impl, gru_variant
        self.input_size, self.hidden_size = input_size, hidden_size
        self.num_layers, self.bidirectional = num_layers, bidirectional
        self.dropout = dropout
        self.directions = 2 if bidirectional else 1
        rows = _GATES[cell] * hidden_size
        bound = 1.0 / math.sqrt(hidden_size)
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else hidden_size * self.directions
            for suffix in self._suffixes(layer):
                shapes: dict[str, tuple[int, ...]] = {
                    "weight_ih": (rows, layer_input),
                    "weight_hh": (rows, hidden_size),
                }
                if bias:
                    shapes |= {"bias_ih": (rows,), "bias_hh": (rows,)}
                for name, shape in shapes.items():
                    parameter = nn.Parameter(torch.empty(shape))
                    nn.init.uniform_(parameter, -bound, bound)
                    self.register_parameter(name + suffix, parameter)
        # The fused path calls a torch layer of the same shape with our
        # parameters (torch.func.functional_call); the template itself holds
        # no data (meta device) and is not a submodule, so it is never saved.
        self._kernel = (
            _TORCH_LAYERS[cell](
                input_size,
                hidden_size,
                num_layers,
                bias=bias,
                batch_first=True,
                dropout=dropout if num_layers > 1 else 0.0,
                bidirectional=bidirectional,
                device="meta",
            ),
        )

    def _suffixes(self, layer: int) -> list[str]:
        return [f"_l{layer}", f"_l{layer}_reverse"][: self.directions]

    def _weight(self, name: str) -> torch.Tensor:
        return self.get_parameter(name)

    def _bias(self, name: str) -> torch.Tensor | None:
        # absent from a layer made with bias=False
        return self._parameters.get(name)

    def forward(
        self,
        x: torch.Tensor,
        lengths: torch.Tensor | None = None,
        state: RecurrentState | None = None,
    ) -> tuple[torch.Tensor, RecurrentState]:
        if x.dim() != 3 or x.size(2) != self.input_size:
            raise ValueError(
                f"RNN expects input (batch, time, {self.input_size}), "
                f"got {tuple(x.shape)}"
            )
        if self.impl == "fused":
            return self._fused(x, lengths, state)
        return self._reference(x, lengths, state)

    def _fused(
        self,
        x: torch.Tensor,
        lengths: torch.Tensor | None,
        state: RecurrentState | None,
    ) -> tuple[torch.Tensor, RecurrentState]:
        kernel = self._kernel[0]
        kernel.train(self.training)
        parameters: dict[str, torch.Tensor] = dict(self.named_parameters())
        if lengths is None:
            return functional_call(kernel, parameters, (x, state))
        packed = pack_padded_sequence(
            x, lengths.cpu().clamp(min=1), batch_first=True, enforce_sorted=False
        )
        output, final = functional_call(kernel, parameters, (packed, state))
        output, _ = pad_packed_sequence(
            output, batch_first=True, total_length=x.size(1)
        )
        return output, final

    def _reference(
        self,
        x: torch.Tensor,
        lengths: torch.Tensor | None,
        state: RecurrentState | None,
    ) -> tuple[torch.Tensor, RecurrentState]:
        n, steps, _ = x.shape
        shape = (self.num_layers * self.directions, n, self.hidden_size)
        if state is None:
            zeros = x.new_zeros(shape)
            state = (zeros, zeros) if self.cell == "lstm" else zeros
        if lengths is None:
            lengths = torch.full((n,), steps, device=x.device)
        valid = torch.arange(steps, device=x.device)[None, :] < lengths[:, None].to(
            x.device
        )  # (n, T)
        finals_h, finals_c = [], []
        for layer in range(self.num_layers):
            if layer > 0:
                x = nn.functional.dropout(x, self.dropout, self.training)
            outputs = []
            for direction, suffix in enumerate(self._suffixes(layer)):
                index = layer * self.directions + direction
                if self.cell == "lstm":
                    initial: RecurrentState = (state[0][index], state[1][index])
                else:
                    initial = state[index]
                out, final = self._run_direction(
                    x, valid, initial, suffix, reverse=direction == 1
                )
                outputs.append(out)
                if isinstance(final, tuple):
                    finals_h.append(final[0])
                    finals_c.append(final[1])
                else:
                    finals_h.append(final)
            x = torch.cat(outputs, dim=-1)
        h_n = torch.stack(finals_h)
        return x, ((h_n, torch.stack(finals_c)) if self.cell == "lstm" else h_n)

    def _run_direction(
        self,
        x: torch.Tensor,
        valid: torch.Tensor,
        state: RecurrentState,
        suffix: str,
        reverse: bool,
    ) -> tuple[torch.Tensor, RecurrentState]:
        """One direction of one layer: x (n, T, I) -> (n, T, H), final state."""
        weight_hh = self._weight("weight_hh" + suffix)
        bias_hh = self._bias("bias_hh" + suffix)
        input_gates = nn.functional.linear(
            x, self._weight("weight_ih" + suffix), self._bias("bias_ih" + suffix)
        )  # (n, T, G*H): the input's share of every gate, all steps at once
        steps = range(x.size(1) - 1, -1, -1) if reverse else range(x.size(1))
        outputs: list[torch.Tensor] = [x.new_empty(0)] * x.size(1)
        for t in steps:
            keep = valid[:, t, None]  # (n, 1): padded steps leave the state alone
            if isinstance(state, tuple):  # the LSTM's (h, c)
                h, c = lstm_step(input_gates[:, t], state, weight_hh, bias_hh)
                state = (torch.where(keep, h, state[0]), torch.where(keep, c, state[1]))
                out = state[0]
            else:
                if self.cell == "gru":
                    h = gru_step(
                        input_gates[:, t], state, weight_hh, bias_hh, self.gru_variant
                    )
                else:
                    h = rnn_tanh_step(input_gates[:, t], state, weight_hh, bias_hh)
                state = out = torch.where(keep, h, state)
            outputs[t] = out * keep
        return torch.stack(outputs, dim=1), state

    def extra_repr(self) -> str:
        return (
            f"{self.cell}, {self.input_size}, {self.hidden_size}, "
            f"num_layers={self.num_layers}, bidirectional={self.bidirectional}, "
            f"impl={self.impl!r}"
        )
