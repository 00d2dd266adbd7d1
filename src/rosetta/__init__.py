"""Rosetta: readable, fast sequence-to-sequence learning for machine translation
(and the language models it grows from).

``rosetta.load(path)`` gives a trained model ready to use (``rosetta.loading``).
"""

from rosetta.errors import RosettaError
from rosetta.families.language_model.inference import LanguageModel
from rosetta.families.nat.translator import NATTranslator
from rosetta.inference.text_translator import TextTranslator, Translation
from rosetta.inference.translator import Translator
from rosetta.loading import load, load_language_model, load_translator
from rosetta.search.options import SearchOptions

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
