"""Rosetta: readable, fast sequence-to-sequence learning for machine translation
(and the language models it grows from).

``rosetta.load(path)`` gives a trained model ready to use (``rosetta.loading``).
"""

from rosetta.decode.options import SearchOptions
from rosetta.errors import RosettaError
from rosetta.families.language_model.inference import LanguageModel
from rosetta.families.nat.translator import NATTranslator
from rosetta.loading import load, load_language_model, load_translator
from rosetta.translation import TextTranslator, Translation
from rosetta.translator import Translator

__version__ = "0.1.0"
__all__ = [
    "LanguageModel",
    "NATTranslator",
    "RosettaError",
    "SearchOptions",
    "TextTranslator",
    "Translation",
    "Translator",
    "__version__",
    "load",
    "load_language_model",
    "load_translator",
]
