"""What ``rosetta import hf`` reads from an NLLB-200, M2M100 or mBART-50
folder's ``config.json`` (``model_type`` ``m2m_100`` or ``mbart``), each
value checked by type and range before anything is sized from it.

The keys are MarianMT's (``MarianSettings``), with these models' own ids:
``<s>`` 0, ``<pad>`` 1, ``</s>`` 2 and ``<unk>`` 3, a decoder that starts
from ``</s>`` and a first output token forced to the target language.
"""

from __future__ import annotations

from pathlib import Path

from rosetta.errors import RosettaError
from rosetta.families.transformer.hf.settings import (
    Flag,
    GenerationSettings,
    Id,
    MarianSettings,
    Text,
)

# the files of such a folder besides config.json and the weights
SPM_FILE = "sentencepiece.bpe.model"
TOKENIZER_JSON = "tokenizer.json"
MODEL_TYPES = {"m2m_100": "M2M100 or NLLB-200", "mbart": "mBART-50"}


class MultilingualSettings(MarianSettings):
    """``config.json`` of an M2M100, NLLB-200 or mBART model."""

    model_type: Text
    pad_token_id: Id = 1
    eos_token_id: Id = 2
    bos_token_id: Id = 0
    decoder_start_token_id: Id | None = 2
    forced_bos_token_id: Id | None = None
    scale_embedding: Flag = True
    activation_function: Text = "relu"
    normalize_before: Flag = True
    add_final_layer_norm: Flag = True
    normalize_embedding: Flag = True

    @property
    def mbart(self) -> bool:
        return self.model_type == "mbart"


def check_layout(settings: MultilingualSettings, path: Path) -> None:
    """The layers transformers builds for ``model_type``: pre-norm with a
    final LayerNorm per stack (and mBART's LayerNorm on the embeddings); a
    configuration that says otherwise would load into another model."""
    for key in ("normalize_before", "add_final_layer_norm"):
        if not getattr(settings, key):
            raise RosettaError(
                f"{path}: {key} false; transformers' {settings.model_type} model "
                "(and Rosetta's import of it) has pre-norm layers with a final "
                "LayerNorm"
            )
    if settings.mbart and not settings.normalize_embedding:
        raise RosettaError(
            f"{path}: normalize_embedding false; mBART normalises its embeddings"
        )
    if (
        not settings.share_encoder_decoder_embeddings
        or not settings.tie_word_embeddings
    ):
        raise RosettaError(
            f"{path}: Rosetta imports {MODEL_TYPES[settings.model_type]} models "
            "whose encoder, decoder and output layer share one table"
        )
    start = settings.decoder_start_token_id
    if start is not None and start != settings.eos_token_id:
        raise RosettaError(
            f"{path}: decoder_start_token_id {start} is not eos_token_id "
            f"{settings.eos_token_id}; these models' decoders start from </s>"
        )


def check_generation(
    generation: GenerationSettings, settings: MultilingualSettings, path: Path
) -> None:
    """``generate`` starts from and stops at ``config.json``'s ids."""
    start = generation.decoder_start_token_id
    if start is not None and start != settings.eos_token_id:
        raise RosettaError(
            f"{path}: decoder_start_token_id {start} is not config.json's "
            f"eos_token_id {settings.eos_token_id}"
        )
    eos = generation.eos_token_id
    if eos is not None and eos not in (settings.eos_token_id, [settings.eos_token_id]):
        raise RosettaError(
            f"{path}: eos_token_id {eos} is not config.json's eos_token_id "
            f"{settings.eos_token_id}"
        )
