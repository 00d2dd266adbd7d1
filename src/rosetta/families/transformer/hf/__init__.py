"""Hugging Face transformers models in and out of Rosetta's Transformer.

What every layout shares: ``folder`` reads a model folder's files safely,
``settings`` its ``config.json`` (and names its layout), ``tensors`` its
weights by name, ``convert`` maps the configuration and tensor names both
ways. The layouts, beside each other: ``marian`` (MarianMT, the OPUS-MT
models) and ``multilingual`` (NLLB-200, M2M100, mBART-50). ``importing``
and ``export`` are the entry points of ``rosetta import hf`` and
``rosetta export hf``, which choose the layout.
"""
