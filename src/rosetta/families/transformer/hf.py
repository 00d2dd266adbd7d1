"""The ``hf`` importer and export format (``rosetta import hf``, ``rosetta
export hf``): Hugging Face transformers models, in MarianMT's layout
(``marian``) or NLLB-200's, M2M100's and mBART-50's (``multilingual``)."""

from __future__ import annotations

from rosetta.families.family import ExportFormat, Importer, Later
from rosetta.families.transformer.marian.settings import SOURCE_SPM

IMPORTER = Importer(
    name="hf",
    summary="a Hugging Face transformers model: MarianMT (the OPUS-MT models), "
    "NLLB-200, M2M100 or mBART-50",
    source="a model folder, or a Hub name such as Helsinki-NLP/opus-mt-de-en or "
    "facebook/nllb-200-distilled-600M (downloaded with pip install 'rosetta[hub]')",
    write=Later("rosetta.families.transformer.hf_import", "import_hf"),
)

EXPORT = ExportFormat(
    name="hf",
    summary="a folder for Hugging Face transformers (AutoModelForSeq2SeqLM): "
    "MarianMT's layout (a post-norm Transformer with sinusoidal positions, "
    "shared embeddings and SentencePiece tokenizers), or that of the NLLB-200, "
    "M2M100 or mBART-50 model a run was imported from",
    marker=SOURCE_SPM,  # a MarianMT export's (the others: sentencepiece.bpe.model)
    kind="a transformers export",
    quantizations=(),
    write=Later("rosetta.families.transformer.hf_export", "write_hf"),
)
