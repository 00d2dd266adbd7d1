"""Rosetta: readable, fast sequence-to-sequence learning for machine translation
(and the language models it grows from)."""

from rosetta.decode.options import SearchOptions
from rosetta.errors import RosettaError
from rosetta.lm import LanguageModel
from rosetta.nat_translator import NATTranslator
from rosetta.translator import Translator

__version__ = "0.1.0"
__all__ = [
    "LanguageModel",
    "NATTranslator",
    "RosettaError",
    "SearchOptions",
    "Translator",
    "__version__",
]
