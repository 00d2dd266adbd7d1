"""The Transformer (``model.arch: transformer``): an encoder and a decoder of
attention layers, with a choice of position schemes (``positions``).

Three layers, read in this order:

1. The model: ``config`` (its section), ``layers`` (attention and
   feed-forward sublayers), ``positions`` (a package: the list of position
   schemes, and one module per ``positions`` value), ``kv_cache`` and
   ``state`` (what decoding carries from step to step), ``model`` (the
   encoder and decoder stacks), ``build`` (the model assembled from its
   section and scheme), ``upgrade`` (older checkpoints' weight names).
2. ``fast``: the decoding fast path, a transform of a trained model
   (``pack_for_inference``) tested equal to the layers.
3. ``ctranslate2``: the other engine, an export and its translator.
4. ``hf``: Hugging Face transformers models in and out (``rosetta import
   hf``, ``rosetta export hf``: ``hf.importing``, ``hf.export``): the
   folder code every layout shares, beside the layouts themselves,
   ``hf.marian`` (OPUS-MT) and ``hf.multilingual`` (NLLB-200, M2M100,
   mBART-50).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rosetta.families.family import ExportFormat, Family, Importer, Later
from rosetta.families.transformer.config import TINY_ATTENTION, TransformerConfig
from rosetta.families.transformer.ctranslate2 import EXPORT as CTRANSLATE2

if TYPE_CHECKING:
    from rosetta.inference.translator import Translator
    from rosetta.interfaces.trained import Trained


HF_IMPORT = Importer(
    name="hf",
    summary="a Hugging Face transformers model: MarianMT (the OPUS-MT models), "
    "NLLB-200, M2M100 or mBART-50",
    source="a model folder, or a Hub name such as Helsinki-NLP/opus-mt-de-en or "
    "facebook/nllb-200-distilled-600M (downloaded with pip install 'rosetta-nmt[hub]')",
    write=Later("rosetta.families.transformer.hf.importing", "import_hf"),
)

HF_EXPORT = ExportFormat(
    name="hf",
    summary="a folder for Hugging Face transformers (AutoModelForSeq2SeqLM): "
    "MarianMT's layout (a post-norm Transformer with sinusoidal positions, "
    "shared embeddings and SentencePiece tokenizers), or that of the NLLB-200, "
    "M2M100 or mBART-50 model a run was imported from",
    # a MarianMT export's source.spm (hf.settings.SOURCE_SPM; the others
    # hold sentencepiece.bpe.model): named here, so listing loads no module
    marker="source.spm",
    kind="a transformers export",
    quantizations=(),
    write=Later("rosetta.families.transformer.hf.export", "write_hf"),
)


def translator(
    trained: Trained, precision: str, packed: bool = True, compiled: object = "auto"
) -> Translator:
    """Decoding with a compiled step (``compile_for_decoding``) where
    ``compiled`` asks for it (auto: on a GPU) and it can be; else on the
    packed fast path (``pack_for_inference``) unless ``packed`` is False."""
    from rosetta.families.transformer.fast.compiled import (
        compile_for_decoding,
        compiles_decoding,
    )
    from rosetta.families.transformer.fast.packed import pack_for_inference
    from rosetta.inference.translator import Translator

    if compiles_decoding(trained.device, precision, compiled):
        return Translator(trained, precision, compile_for_decoding, in_workers=False)
    return Translator(trained, precision, pack_for_inference if packed else None)


FAMILY = Family(
    summary="the Transformer encoder-decoder",
    config=TransformerConfig,
    build=Later("rosetta.families.transformer.build", "build"),
    prepare=Later("rosetta.train.prepare", "prepare_data"),
    training=Later("rosetta.train.translation_task", "translation_training"),
    inference=translator,
    exports=(CTRANSLATE2, HF_EXPORT),
    importers=(HF_IMPORT,),
    upgrade_weights=Later("rosetta.families.transformer.upgrade", "upgrade_weights"),
    example={"arch": "transformer", **TINY_ATTENTION},
    compiles=True,
)
