"""The one line a new scheme adds, made in a running process: importing
this module lists ``strided`` with the Transformer's position schemes."""

from rosetta.families.transformer import positions

positions.SCHEMES["strided"] = positions.Listed(
    "tests.position_scheme.strided", "sinusoids at every other position"
)
