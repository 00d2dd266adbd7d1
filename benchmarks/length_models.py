"""The models of the lengths study (``length_generalisation.py``): the
Transformer ``rosetta task`` configures, with each position scheme, and two
GRUs, all of one budget of layers and widths."""

from __future__ import annotations

from rosetta.cli.task import TASK_MODEL

TRANSFORMER = {  # what rosetta task's config trains, with each scheme below
    **TASK_MODEL,
    "positions": "sinusoidal",
    "max_positions": 512,  # outputs of duplicate reach 401 tokens
}
MODELS = {
    "transformer": TRANSFORMER,
    "transformer-relative": {**TRANSFORMER, "positions": "relative"},
    "transformer-relative-randomized": {
        **TRANSFORMER,
        "positions": "relative-randomized",
    },
    "transformer-randomized": {**TRANSFORMER, "positions": "randomized"},
    "transformer-shifted": {**TRANSFORMER, "positions": "shifted"},
    "transformer-nope": {**TRANSFORMER, "positions": "nope"},
    "transformer-alibi": {**TRANSFORMER, "positions": "alibi"},
    "transformer-alibi-randomized": {**TRANSFORMER, "positions": "alibi-randomized"},
    "transformer-abacus": {**TRANSFORMER, "positions": "abacus"},
    "transformer-coupled": {**TRANSFORMER, "positions": "coupled"},
    "transformer-abacus-alibi": {**TRANSFORMER, "positions": "abacus-alibi"},
    "transformer-abacus-learned": {
        **TRANSFORMER,
        "positions": "abacus",
        "number_table": "learned",
    },
    "transformer-coupled-learned": {
        **TRANSFORMER,
        "positions": "coupled",
        "number_table": "learned",
    },
    "gru-attention": {
        "arch": "rnn",
        "cell": "gru",
        "d_model": 64,
        "hidden_size": 128,
        "bidirectional": True,
        "attention": "bahdanau",
        "encoder_layers": 1,
        "decoder_layers": 1,
        "dropout": 0.0,
    },
    "gru": {
        "arch": "rnn",
        "cell": "gru",
        "d_model": 64,
        "hidden_size": 256,
        "attention": "none",
        "encoder_layers": 2,
        "decoder_layers": 2,
        "dropout": 0.0,
    },
}


# the first study's models run by default; the newer ones by name (positions
# inside numbers place every letter at 0)
NEWER = (
    "transformer-relative-randomized",
    "transformer-alibi-randomized",
    "transformer-abacus",
    "transformer-coupled",
    "transformer-abacus-learned",
    "transformer-coupled-learned",
    "transformer-abacus-alibi",
)
STUDIED = tuple(m for m in MODELS if m not in NEWER)
