"""Rosetta: readable, fast sequence-to-sequence learning for machine translation."""

from rosetta.decode.options import SearchOptions
from rosetta.errors import RosettaError
from rosetta.translator import Translator

__version__ = "0.1.0"
__all__ = ["RosettaError", "SearchOptions", "Translator", "__version__"]
