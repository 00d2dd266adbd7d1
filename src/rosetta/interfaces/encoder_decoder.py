"""The encoder-decoder interface, which every model implements.

``Encoder.forward(src, src_mask) -> memory`` (whatever the encoder hands its
decoder: a tensor for the Transformer, states and final states for recurrent
encoders; search passes it along without looking inside);
``Decoder.init_state(memory, src_mask) -> state``;
``Decoder.forward(tgt_in, state) -> (features, state)``, the vectors (n, T, d)
that the output projection, a part of its own, maps to logits over the target
vocabulary; ``EncoderDecoder.forward(src, src_mask, tgt_in)`` runs the three
in turn and returns the features, and ``model.output_proj(features)`` gives
the logits. The trainer's loss takes the features and the projection, so it
never builds the logits of every position at once.

Search drives a model only through ``encode``, ``init_state`` and
``step(prev_tokens, state) -> (log_probs, state)``; the decoding state is a
small object passed in and returned (nothing is cached on modules), and its
``reorder(index)`` selects and reorders batch rows for beam search.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Protocol, Self

import torch
from torch import nn

Memory = Any  # what an encoder hands its own decoder; opaque to everyone else


class DecoderState(Protocol):
    """What a decoder carries from one step to the next.

    ``attention`` holds the cross-attention weights of the positions just
    decoded, (n, t, layers, heads, S), when they were asked for, else None.
    """

    attention: torch.Tensor | None

    def reorder(self, index: torch.Tensor) -> Self:
        """Rows ``index`` of the batch, in that order (for beams); a new state."""
        ...


class Encoder(nn.Module, ABC):
    @abstractmethod
    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> Memory:
        """(n, S) ids, (n, S) bool (True at real tokens) -> memory."""


class Decoder(nn.Module, ABC):
    @abstractmethod
    def init_state(self, memory: Memory, src_mask: torch.Tensor) -> DecoderState:
        """The state before the first target token."""

    @abstractmethod
    def forward(
        self,
        tgt_in: torch.Tensor,
        state: DecoderState,
        tgt_mask: torch.Tensor | None = None,
        need_attention: bool = False,
    ) -> tuple[torch.Tensor, DecoderState]:
        """(n, T) decoder input ids -> features (n, T, d) and the advanced state.

        ``tgt_mask`` (n, T) bool marks real target tokens (teacher forcing).
        With ``need_attention`` the state's ``attention`` holds the weights.
        """


class EncoderDecoder(nn.Module):
    """An encoder, a decoder and the output projection, composed by injection.

    ``output_proj`` maps decoder features (..., d) to logits (..., V): an
    ``nn.Linear``, whose weight may be tied to the target embedding.
    """

    def __init__(self, encoder: Encoder, decoder: Decoder, output_proj: nn.Module):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.output_proj = output_proj

    def forward(
        self,
        src: torch.Tensor,
        src_mask: torch.Tensor,
        tgt_in: torch.Tensor,
        tgt_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Teacher-forced decoder features (n, T, d) for decoder input
        ``tgt_in`` (n, T); ``output_proj`` maps them to the logits (n, T, V).
        A loss that projects itself takes the features and ``output_proj``."""
        memory = self.encode(src, src_mask)
        state = self.init_state(memory, src_mask)
        features, _ = self.decoder(tgt_in, state, tgt_mask)
        return features

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> Memory:
        return self.encoder(src, src_mask)

    def init_state(self, memory: Memory, src_mask: torch.Tensor) -> DecoderState:
        return self.decoder.init_state(memory, src_mask)

    def step(
        self,
        prev_tokens: torch.Tensor,
        state: DecoderState,
        need_attention: bool = False,
    ) -> tuple[torch.Tensor, DecoderState]:
        """One decoding step: (n,) previous tokens -> (n, V) log-probabilities."""
        features, state = self.decoder(
            prev_tokens.unsqueeze(1), state, need_attention=need_attention
        )
        logits = self.output_proj(features[:, -1])
        return torch.log_softmax(logits.float(), dim=-1), state

    def steps(
        self, tokens: torch.Tensor, state: DecoderState, first: int = 0
    ) -> tuple[torch.Tensor, DecoderState]:
        """``step`` over (n, T) tokens in one pass: (n, T - first, V), at
        each position from ``first`` on the log-probabilities of the token
        after it (a forced prefix, fed at once; the positions before
        ``first`` need no scores)."""
        features, state = self.decoder(tokens, state)
        logits = self.output_proj(features[:, first:])
        return torch.log_softmax(logits.float(), dim=-1), state


def output_projection_moved(stored: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A checkpoint of a Rosetta whose decoder held the output projection
    (``decoder.output_proj.*``), with the names it has as a part of its own
    (``output_proj.*``)."""
    old = "decoder.output_proj."
    return {
        name.removeprefix("decoder.") if name.startswith(old) else name: tensor
        for name, tensor in stored.items()
    }
