"""NLLB-200, M2M100 and mBART-50 models (``model_type`` ``m2m_100`` and
``mbart`` of Hugging Face transformers) in and out of Rosetta's Transformer:
``settings`` reads a model's ``config.json``, ``vocabulary`` its token table
and language codes, ``importer`` writes a run (``rosetta import hf``),
``exporter`` a folder in their layout (``rosetta export hf``), with
``nllb_tokenizer`` for NLLB's ``tokenizer.json``."""
