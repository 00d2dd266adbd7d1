"""Where the Transformer's tokens are: the position schemes that ``model.positions``
names, and the training-time draws of ``randomized`` and ``shifted``.

``sinusoidal`` adds sinusoids of positions 0, 1, 2, ... to both embeddings
(``TransformerEmbedding``); ``relative`` scores distances in self-attention
instead (``rosetta.nn.relative_attention``); ``randomized`` and ``shifted``
add sinusoids at positions drawn afresh for every sentence pair in training
(``RandomPositionsTransformer``), and ``relative-randomized`` scores the
distances of such positions; ``nope`` adds them in the encoder only;
``alibi`` adds none and subtracts a learned slope times the distance from
every attention score (``rosetta.nn.linear_bias``); ``abacus`` and
``coupled`` add sinusoids of a digit's place in its number, shifted by one
offset drawn per pair in training (``rosetta.families.transformer.
number_positions``, ``RandomPositionsTransformer``); ``abacus-alibi`` adds
abacus's sinusoids and penalises, in the encoder and across, the distance
between two digits' places (``rosetta.nn.linear_bias.place_distances``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from torch import nn

from rosetta.families.transformer.number_positions import shifted
from rosetta.families.transformer.state import TransformerState
from rosetta.interfaces.encoder_decoder import Decoder, Encoder, EncoderDecoder, Memory

# (rows, length, table size, device) -> (rows, length) positions
Draw = Callable[[int, int, int, torch.device], torch.Tensor]


def _check_fits(length: int, span: int) -> None:
    if length > span:
        raise ValueError(f"sequence of {length} tokens exceeds max_positions ({span})")


def draw_positions(
    rows: int, length: int, span: int, device: torch.device
) -> torch.Tensor:
    """(rows, length): for every row, ``length`` distinct positions drawn
    uniformly from ``0 .. span-1`` and sorted (randomized positions)."""
    _check_fits(length, span)
    chosen = torch.rand(rows, span, device=device).topk(length, dim=1).indices
    return chosen.sort(dim=1).values


def draw_offsets(
    rows: int, length: int, span: int, device: torch.device
) -> torch.Tensor:
    """(rows, length): for every row, ``k, k+1, ..., k+length-1`` with ``k``
    drawn uniformly from ``0 .. span-length`` (shifted positions)."""
    _check_fits(length, span)
    start = torch.randint(0, span - length + 1, (rows, 1), device=device)
    return start + torch.arange(length, device=device)


class RandomPositionsTransformer(EncoderDecoder):
    """A Transformer that, in training, places every sentence pair at
    positions drawn afresh, so that every position of its table is trained
    and a sentence, or a number, longer than any seen in training finds none
    new (``training_positions``). Outside training (validation, search) the
    encoder and decoder place their tokens themselves: ``0, 1, 2, ...``, as
    the sinusoidal Transformer decodes, or inside numbers without an offset.

    ``draw``: the draw of ``randomized`` (distinct positions anywhere in the
    table, sorted: ``draw_positions``), ``alibi-randomized`` and
    ``relative-randomized`` (the same) or
    ``shifted`` (one start, consecutive: ``draw_offsets``); without one,
    ``number_offset`` is the largest offset of ``abacus`` and ``coupled``.
    """

    def __init__(
        self,
        encoder: Encoder,
        decoder: Decoder,
        output_proj: nn.Module,
        draw: Draw | None = None,
        number_offset: int = 0,
    ):
        super().__init__(encoder, decoder, output_proj)
        self.draw = draw
        self.number_offset = number_offset

    def training_positions(
        self, src: torch.Tensor, src_mask: torch.Tensor, tgt_in: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The source's (n, S) and the target's (n, T) positions in training.

        A draw: ``max(S, T)`` positions, the source taking the first ``S`` and
        the target the first ``T``, so that source token ``i`` and target
        token ``i`` keep one position, as they do with ``0, 1, 2, ...``.
        Inside numbers: every digit of a pair, source and target, moved by
        one offset drawn from ``0 .. number_offset``."""
        if self.draw is not None:
            span = self.encoder.embedding.positions.size(0)
            longest = max(src.size(1), tgt_in.size(1))
            drawn = self.draw(src.size(0), longest, span, src.device)
            return drawn[:, : src.size(1)], drawn[:, : tgt_in.size(1)]
        rows = (src.size(0), 1)
        offset = torch.randint(0, self.number_offset + 1, rows, device=src.device)
        source = self.encoder.numbers(src, real=src_mask)
        return shifted(source, offset), shifted(self.decoder.numbers(tgt_in), offset)

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> Memory:
        """The memory, and with positions inside numbers the source's places
        (n, S), which the decoder's distance penalties read."""
        memory = self.encoder(src, src_mask)
        if self.encoder.numbers is None:
            return memory
        return memory, self.encoder.numbers(src, real=src_mask)

    def init_state(self, memory: Memory, src_mask: torch.Tensor) -> TransformerState:
        if self.encoder.numbers is None:
            return self.decoder.init_state(memory, src_mask)
        memory, places = memory
        state = self.decoder.init_state(memory, src_mask)
        return replace(state, source_positions=places)

    def forward(
        self,
        src: torch.Tensor,
        src_mask: torch.Tensor,
        tgt_in: torch.Tensor,
        tgt_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        if not self.training:
            return super().forward(src, src_mask, tgt_in, tgt_mask)
        source, target = self.training_positions(src, src_mask, tgt_in)
        return self.forward_placed(src, src_mask, tgt_in, source, target, tgt_mask)

    def forward_placed(
        self,
        src: torch.Tensor,
        src_mask: torch.Tensor,
        tgt_in: torch.Tensor,
        source: torch.Tensor,
        target: torch.Tensor,
        tgt_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Teacher-forced features with the source's (n, S) and the target's
        (n, T) positions given: the training forward, at positions of one's
        choosing (``benchmarks/number_places.py`` moves test pairs with it)."""
        memory = self.encoder(src, src_mask, source)
        state = self.decoder.init_state(memory, src_mask)
        state = replace(state, source_positions=source)
        features, _ = self.decoder(tgt_in, state, tgt_mask, positions=target)
        return features


@dataclass(frozen=True)
class PositionScheme:
    """What one ``model.positions`` value changes in a Transformer: which
    embeddings get sinusoids, whether self-attention scores relative
    distances, whether every attention subtracts distance penalties, which
    positions training draws (none: ``0, 1, 2, ...``), whether digits are
    placed inside their numbers (``abacus``, ``coupled``), and whether each
    side learns a vector per position instead of sinusoids (``learned``)."""

    name: str
    encoder_sinusoids: bool
    decoder_sinusoids: bool
    relative: bool = False
    distance_penalties: bool = False
    draw: Draw | None = None
    numbers: str | None = None
    learned: bool = False


SCHEMES = {
    scheme.name: scheme
    for scheme in (
        PositionScheme("sinusoidal", True, True),
        PositionScheme("relative", False, False, relative=True),
        PositionScheme(
            "relative-randomized", False, False, relative=True, draw=draw_positions
        ),
        PositionScheme("randomized", True, True, draw=draw_positions),
        PositionScheme("shifted", True, True, draw=draw_offsets),
        PositionScheme("nope", True, False),
        PositionScheme("alibi", False, False, distance_penalties=True),
        PositionScheme(
            "alibi-randomized",
            False,
            False,
            distance_penalties=True,
            draw=draw_positions,
        ),
        PositionScheme("abacus", True, True, numbers="abacus"),
        PositionScheme("coupled", True, True, numbers="coupled"),
        PositionScheme(
            "abacus-alibi", True, True, distance_penalties=True, numbers="abacus"
        ),
        PositionScheme("learned", True, True, learned=True),
    )
}
POSITIONS = tuple(SCHEMES)
