"""The parts of the schemes whose attentions subtract distance penalties
(``alibi``, ``alibi-randomized``, ``abacus-alibi``): each layer's masks
become additive biases, ``−m_h·|d|`` (``rosetta.nn.linear_bias``).

The distances are those of ``0, 1, 2, ...``; of the positions training
drew, where it drew them; or, with digits placed inside their numbers
(``places``), those of the digits' places in the encoder and across.
"""

from __future__ import annotations

import torch

from rosetta.families.transformer.positions.base import (
    DecoderPositions,
    EncoderPositions,
)
from rosetta.families.transformer.positions.numbers import NumberPositions
from rosetta.families.transformer.state import TransformerState
from rosetta.nn.linear_bias import (
    LinearBiases,
    cross_distances,
    place_distances,
    placed_cross_distances,
    placed_self_distances,
    self_distances,
)


class PenalisedEncoder(EncoderPositions):
    """``biases``: the self-attention's slopes; ``places``: digits' places
    inside numbers, which the distances are then taken between."""

    def __init__(self, biases: LinearBiases, places: NumberPositions | None = None):
        super().__init__()
        self.biases = biases
        self.numbers = places

    def place(
        self, tokens: torch.Tensor, real: torch.Tensor, given: torch.Tensor | None
    ) -> torch.Tensor | None:
        if given is None and self.numbers is not None:
            return self.numbers(tokens, real=real)
        return given

    def kept(self, tokens: torch.Tensor, real: torch.Tensor) -> torch.Tensor | None:
        """The source's places, which the cross-attention's distances read."""
        return None if self.numbers is None else self.numbers(tokens, real=real)

    def masks(
        self,
        layers: int,
        length: int,
        mask: torch.Tensor,
        positions: torch.Tensor | None,
    ) -> list[torch.Tensor]:
        distance = self_distances(length, length, mask.device)
        if self.numbers is not None:  # digits by place
            distance = place_distances(positions, positions)
        elif positions is not None:  # drawn in training
            distance = placed_self_distances(positions)
        return [self.biases.bias(index, distance, mask) for index in range(layers)]


class PenalisedDecoder(DecoderPositions):
    """``self_biases`` and ``cross_biases``: the slopes of the self- and
    cross-attention; ``places``: positions inside numbers, each token's
    from the one before it (``state.carried``)."""

    steps_by_count = False

    def __init__(
        self,
        self_biases: LinearBiases,
        cross_biases: LinearBiases,
        places: NumberPositions | None = None,
    ):
        super().__init__()
        self.self_biases = self_biases
        self.cross_biases = cross_biases
        self.numbers = places

    def place(
        self, tokens: torch.Tensor, state: TransformerState, given: torch.Tensor | None
    ) -> torch.Tensor | None:
        if given is None and self.numbers is not None:
            return self.numbers(tokens, state.carried)
        return given

    def carried(self, positions: torch.Tensor | None) -> torch.Tensor | None:
        return None if self.numbers is None else positions[:, -1]  # type: ignore[index]

    def masks(
        self,
        layers: int,
        heads: int,
        state: TransformerState,
        new: int,
        self_mask: torch.Tensor | None,
        positions: torch.Tensor | None,
    ) -> tuple[list[torch.Tensor | None], list[torch.Tensor]]:
        """Each layer's own biases; from the target's ``positions`` and
        ``state.source_positions`` where training drew them, and across from
        the digits' places with positions inside numbers (the decoder's own
        tokens by their order: a sum's digits are its places)."""
        total = state.length + new
        device = state.src_mask.device
        allowed = torch.ones((), dtype=torch.bool, device=device)
        if self_mask is not None:
            allowed = self_mask
        back = self_distances(new, total, device)
        src_mask = state.src_mask[:, 0, 0]
        across = cross_distances(state.length, new, src_mask, heads)
        source = state.source_positions
        by_place = self.numbers is not None and positions is not None
        if by_place and source is not None:
            # a sentence's beams are its queries, one run each:
            # (n, new) -> (m, group * new)
            grouped = positions.reshape(source.size(0), -1)  # type: ignore[union-attr]
            across = place_distances(grouped, source)
        elif positions is not None and source is not None:
            back = placed_self_distances(positions)
            across = placed_cross_distances(positions, source, src_mask, heads)
        if state.group > 1 and new > 1 and not by_place:
            across = across.repeat(1, 1, state.group, 1)
        return (
            [self.self_biases.bias(i, back, allowed) for i in range(layers)],
            [self.cross_biases.bias(i, across, state.src_mask) for i in range(layers)],
        )


def penalised_encoder(
    layers: int, heads: int, places: NumberPositions | None = None
) -> PenalisedEncoder:
    return PenalisedEncoder(LinearBiases(layers, heads), places)


def penalised_decoder(
    layers: int, heads: int, places: NumberPositions | None = None
) -> PenalisedDecoder:
    """The cross-attention's heads count the source from both ends."""
    return PenalisedDecoder(
        LinearBiases(layers, heads), LinearBiases(layers, heads, both_ends=True), places
    )
