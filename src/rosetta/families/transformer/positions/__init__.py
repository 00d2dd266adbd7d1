"""Where the Transformer's tokens are: the position schemes ``model.positions``
names, one module each in this package, listed once in ``SCHEMES``.

This module is the list alone and loads no torch: the configuration reads
it to check ``model.positions`` and to describe every scheme. A scheme's
module holds ``SCHEME``, a ``base.PositionScheme`` (how it embeds, what it
gives the attentions, which positions training draws, what decoding carries
from step to step, which export formats hold it), imported when a model is
built (``base.scheme_of``). A new scheme is its module and one line here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Listed:
    """One scheme of the list: the module that holds its ``SCHEME``, what it
    does (the configuration's description), and whether it places digits
    inside their numbers (``model.number_table: learned`` needs one that
    does)."""

    module: str
    summary: str
    digit_places: bool = False


def _here(name: str) -> str:
    return f"{__name__}.{name}"


SCHEMES: dict[str, Listed] = {
    "sinusoidal": Listed(
        _here("sinusoidal"), "absolute positions added to the embeddings"
    ),
    "relative": Listed(
        _here("relative"), "self-attention scores distances (Transformer-XL)"
    ),
    "relative-randomized": Listed(
        _here("relative_randomized"),
        "the distances of random sorted positions up to max_positions in training",
    ),
    "randomized": Listed(
        _here("randomized"),
        "in training, sinusoids at random sorted positions up to max_positions",
    ),
    "shifted": Listed(
        _here("shifted"),
        "in training, at consecutive positions from a random start",
    ),
    "nope": Listed(_here("nope"), "sinusoids in the encoder, none in the decoder"),
    "alibi": Listed(
        _here("alibi"),
        "no sinusoids, every attention subtracts a learned slope times the "
        "distance (cross-attention from both ends of the source)",
    ),
    "alibi-randomized": Listed(
        _here("alibi_randomized"),
        "alibi at random sorted positions up to max_positions in training, so "
        "that distances beyond the training lengths are learnt",
    ),
    "abacus": Listed(
        _here("abacus"),
        "a digit's place in its number as written, other tokens 0",
        digit_places=True,
    ),
    "coupled": Listed(
        _here("coupled"),
        "in the source, a digit's place from its number's end (its significance "
        "when written most significant first), in the output its place as written",
        digit_places=True,
    ),
    "abacus-alibi": Listed(
        _here("abacus_alibi"),
        "abacus, and the encoder and cross-attention subtract a learned slope "
        "times the distance between two digits' places",
        digit_places=True,
    ),
    "learned": Listed(
        _here("learned"), "a trained vector per position, one table per side (mBART's)"
    ),
}


def described() -> str:
    """Every listed scheme and what it does, for the configuration."""
    return "; ".join(f"{name}: {listed.summary}" for name, listed in SCHEMES.items())


def placing_digits() -> list[str]:
    """The schemes that place digits inside their numbers."""
    return [name for name, listed in SCHEMES.items() if listed.digit_places]


def listed(name: str) -> Listed:
    """The list's entry of ``name``; an unknown name is a ValueError naming
    the schemes."""
    if name not in SCHEMES:
        raise ValueError(f"positions {name!r}: use one of {', '.join(SCHEMES)}")
    return SCHEMES[name]
