"""MarianMT models (the 1,000+ OPUS-MT models of the Hugging Face Hub) in and
out of Rosetta's Transformer: ``hf_folder`` reads a model's files safely,
``convert`` maps the configuration, ids and tensor names both ways,
``importer`` writes a run (``rosetta import hf``)."""

from __future__ import annotations

from rosetta.families.family import Importer
from rosetta.families.transformer.marian.importer import import_marian

IMPORTER = Importer(
    name="hf",
    summary="a MarianMT model of Hugging Face transformers (the OPUS-MT models)",
    source="a MarianMT folder, or a Hub name such as Helsinki-NLP/opus-mt-de-en "
    "(downloaded with pip install 'rosetta[hub]')",
    write=import_marian,
)
