"""Checkpoints of earlier Rosettas, with the names their weights have now
(the family's ``upgrade_weights``)."""

from __future__ import annotations

from typing import Any

from rosetta.interfaces.encoder_decoder import output_projection_moved

# distance penalties' slopes, once the encoder's and decoder's own parts,
# now their position scheme's (``positions.penalties``)
MOVED = {
    "encoder.biases.": "encoder.positions.biases.",
    "decoder.self_biases.": "decoder.positions.self_biases.",
    "decoder.cross_biases.": "decoder.positions.cross_biases.",
}


def positions_moved(stored: dict[str, Any]) -> dict[str, Any]:
    """The names of a checkpoint whose encoder and decoder held the slopes."""
    found = {}
    for name, tensor in stored.items():
        for old, new in MOVED.items():
            if name.startswith(old):
                name = new + name.removeprefix(old)
        found[name] = tensor
    return found


def upgrade_weights(stored: dict[str, Any]) -> dict[str, Any]:
    """Every rename since the first Rosetta, in turn."""
    return positions_moved(output_projection_moved(stored))
