"""Translating text with a trained model: what every translator offers
(``text_translator``) and the autoregressive ``Translator``."""
