"""MarianMT models (the 1,000+ OPUS-MT models of the Hugging Face Hub) in and
out of Rosetta's Transformer: ``hf_folder`` reads a model's files safely,
``convert`` maps the configuration, ids and tensor names both ways,
``importer`` writes a run (``rosetta import hf``), ``exporter`` a MarianMT
folder (``rosetta export hf``)."""

from __future__ import annotations

from rosetta.families.family import ExportFormat, Importer, Later
from rosetta.families.transformer.marian.settings import SOURCE_SPM

IMPORTER = Importer(
    name="hf",
    summary="a MarianMT model of Hugging Face transformers (the OPUS-MT models)",
    source="a MarianMT folder, or a Hub name such as Helsinki-NLP/opus-mt-de-en "
    "(downloaded with pip install 'rosetta[hub]')",
    write=Later("rosetta.families.transformer.marian.importer", "import_marian"),
)

EXPORT = ExportFormat(
    name="hf",
    summary="a MarianMT folder for Hugging Face transformers "
    "(MarianMTModel.from_pretrained); a post-norm Transformer with sinusoidal "
    "positions, shared embeddings and SentencePiece tokenizers",
    marker=SOURCE_SPM,
    kind="a MarianMT export",
    quantizations=(),
    write=Later("rosetta.families.transformer.marian.exporter", "write_marian"),
)
