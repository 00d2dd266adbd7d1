"""Rosetta: readable, fast sequence-to-sequence learning for machine translation
(and the language models it grows from).

``rosetta.load(path)`` gives a trained model ready to use (``rosetta.jobs.loading``).

The names below are imported when first used, so that ``import rosetta``
(and the command line's ``--version`` and ``--help``) do not wait for PyTorch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rosetta.errors import RosettaError
from rosetta.runtime.lazy import exports

if TYPE_CHECKING:
    from rosetta.families.nat.translator import NATTranslator
    from rosetta.inference.language_model import LanguageModel
    from rosetta.inference.text_translator import TextTranslator
    from rosetta.inference.translation import Translation
    from rosetta.inference.translator import Translator
    from rosetta.jobs.loading import load, load_language_model, load_translator
    from rosetta.search.options import SearchOptions

# each public name and the module that defines it
WHERE = {
    "LanguageModel": "rosetta.inference.language_model",
    "NATTranslator": "rosetta.families.nat.translator",
    "SearchOptions": "rosetta.search.options",
    "TextTranslator": "rosetta.inference.text_translator",
    "Translation": "rosetta.inference.translation",
    "Translator": "rosetta.inference.translator",
    "load": "rosetta.jobs.loading",
    "load_language_model": "rosetta.jobs.loading",
    "load_translator": "rosetta.jobs.loading",
}

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

__getattr__ = exports(__name__, WHERE)
