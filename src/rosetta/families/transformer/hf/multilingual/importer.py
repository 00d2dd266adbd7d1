"""``rosetta import hf`` of an NLLB-200, M2M100 or mBART-50 model (a local
folder or a Hub name such as facebook/nllb-200-distilled-600M) as an
ordinary Rosetta run.

What differs from MarianMT is each an ordinary option of Rosetta's
Transformer: pre-norm layers with a final LayerNorm per stack, fairseq's
sinusoids counted from ``<pad>`` + 1 (M2M100, NLLB) or a learned position
table whose first two rows are never read (mBART), a LayerNorm on the
embeddings and unscaled embeddings (mBART). The ids: Rosetta's ``<pad>``,
``<unk>`` and ``<eos>`` take the rows of theirs, ``<bos>`` the row of
``</s>`` (their decoder starts from it), every other id follows in their
order; the language codes become the tokenizer's ``languages``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from rosetta.config.reading import config_from_dict
from rosetta.config.schema import Config
from rosetta.data.piece_table import PieceTableTokenizer
from rosetta.data.tokenizer import TokenizerPair
from rosetta.errors import RosettaError, in_words
from rosetta.families.transformer.config import TransformerConfig
from rosetta.families.transformer.hf.convert import (
    imported_ids,
    shared_section,
    take_rows,
)
from rosetta.families.transformer.hf.folder import read_tensors
from rosetta.families.transformer.hf.multilingual.settings import (
    MODEL_TYPES,
    SPM_FILE,
    MultilingualSettings,
    check_generation,
    check_layout,
)
from rosetta.families.transformer.hf.multilingual.vocabulary import read_token_table
from rosetta.families.transformer.hf.settings import (
    CONFIG_FILE,
    GENERATION_FILE,
    TOKENIZER_CONFIG,
    VOCAB_FILE,
    GenerationSettings,
    check_ids,
    read_object,
)
from rosetta.families.transformer.hf.tensors import (
    Weights,
    check_sizes,
    layer_tensors,
    output_tensors,
    token_tables,
)
from rosetta.families.transformer.imported_run import write_imported_run
from rosetta.nn.positional import positional_encoding
from rosetta.runs.schemas import ImportedRecord
from rosetta.runtime.records import parse_record
from rosetta.runtime.resources import refuse_beyond_memory


def read_settings(
    path: Path, config: dict[str, Any]
) -> tuple[MultilingualSettings, GenerationSettings]:
    """``config.json`` (read as ``config``) and ``generation_config.json``,
    each checked alone and against the other."""
    where = path / CONFIG_FILE
    settings = parse_record(
        config, MultilingualSettings, str(where), f"a {config['model_type']} config"
    )
    check_ids(settings, where)
    check_layout(settings, where)
    generation = parse_record(
        read_object(path / GENERATION_FILE, required=False),
        GenerationSettings,
        str(path / GENERATION_FILE),
        "the generation settings",
    )
    check_generation(generation, settings, path / GENERATION_FILE)
    return settings, generation


def import_multilingual(
    path: Path, config: dict[str, Any], source: str, folder: Path, log
) -> None:
    """Fill the empty ``folder`` with the run of the model in ``path``, whose
    ``config.json`` is ``config``."""
    where = path / CONFIG_FILE
    settings, generation = read_settings(path, config)
    spm_path = path / SPM_FILE
    if not spm_path.is_file():
        raise RosettaError(f"{spm_path}: missing; the tokenizer is read from it")
    spm_model = spm_path.read_bytes()
    family = tokenizer_family(path, settings, config)
    m2m100 = family == "m2m100"
    refuse_beyond_memory(
        8 * settings.max_position_embeddings * settings.d_model,
        f"{where}: max_position_embeddings {settings.max_position_embeddings}",
    )
    weights_path, tensors = read_tensors(path)  # the large part, read last
    weights = Weights(tensors, weights_path, where)
    del tensors
    check_sizes(weights, settings)
    # vocab_size is the weights' now: the table is padded to it, no further
    table = read_token_table(path, spm_model, family, settings.vocab_size)
    ids = imported_ids(
        {piece: i for i, piece in enumerate(table.pieces)},
        settings.vocab_size,
        settings.eos_token_id,
        settings.pad_token_id,
        str(path / (VOCAB_FILE if m2m100 else SPM_FILE)),
        start=settings.eos_token_id,
    )
    shared, _ = token_tables(weights, settings)
    stored = {"encoder.embedding.token.weight": take_rows(shared, ids.rows)}
    bias, _ = output_tensors(weights, settings)
    if settings.mbart:
        stored["output_proj.bias"] = take_rows(bias, ids.rows)
    elif bool(bias.any()):
        raise RosettaError(
            f"{weights_path}: final_logits_bias is not zero; M2M100 has none"
        )
    stored |= layer_tensors(weights, settings)
    stored |= stack_tensors(weights, settings)
    weights.check_left_over()
    stored = {name: t.float().contiguous() for name, t in stored.items()}
    tokens = dict(
        zip(
            table.languages,
            (table.pieces[i] for i in table.languages.values()),
            strict=True,
        )
    )
    tokenizer = piece_table(spm_model, ids.tokens, tokens, spm_path)
    rosetta_config = run_config(path, settings)
    imported = ImportedRecord(
        source=source,
        format=f"{MODEL_TYPES[settings.model_type]} (Hugging Face transformers, "
        f"{settings.model_type})",
        generation=search_settings(settings, generation),
    )
    write_imported_run(
        folder, rosetta_config, TokenizerPair(tokenizer, tokenizer), stored, imported
    )
    log(f"import: vocabulary {len(tokenizer):,}, {len(table.languages)} languages")


# the tokenizers whose sources start with their language's code, and the
# table each numbers: vocab.json's (M2M100) or SentencePiece's pieces + 1
TOKENIZERS = {
    "M2M100Tokenizer": "m2m100",
    "NllbTokenizer": "nllb",
    "NllbTokenizerFast": "nllb",
    "MBart50Tokenizer": "mbart50",
    "MBart50TokenizerFast": "mbart50",
}
SOURCE_FIRST = (
    "; Rosetta imports models whose sources start with it (NLLB-200, M2M100, mBART-50)"
)


def tokenizer_family(
    path: Path, settings: MultilingualSettings, config: dict[str, Any]
) -> str:
    """The tokenizer transformers reads: ``m2m100``, ``nllb`` or
    ``mbart50``, by the class ``tokenizer_config.json`` names, else
    ``config.json`` (``config``), else ``model_type``'s (``m2m_100``:
    M2M100's; ``mbart``: mBART-cc25's, refused as any tokenizer that puts
    the source's code after ``</s>``)."""
    where = path / TOKENIZER_CONFIG
    named = read_object(where, required=False)
    legacy = named.get("legacy_behaviour", False)
    if not isinstance(legacy, bool):  # transformers takes any truthy value as true
        raise RosettaError(f"{where}: legacy_behaviour {legacy!r} is not true or false")
    kind = named.get("tokenizer_class")
    if kind is None and config.get("tokenizer_class") is not None:
        where, kind = path / CONFIG_FILE, config["tokenizer_class"]
    if kind is not None and not isinstance(kind, str):
        raise RosettaError(f"{where}: tokenizer_class {kind!r} is not a class name")
    if legacy or kind in ("MBartTokenizer", "MBartTokenizerFast"):
        raise RosettaError(
            f"{where}: a tokenizer that puts the source's language code after "
            f"</s> (mBART-cc25's, or NLLB's legacy_behaviour){SOURCE_FIRST}"
        )
    if kind is None and settings.mbart:
        raise RosettaError(
            f"{where}: no tokenizer_class, so transformers reads the tokenizer as "
            "MBartTokenizer (mBART-cc25's), which puts the source's language code "
            f"after </s>{SOURCE_FIRST}"
        )
    if kind is None:
        if not (path / VOCAB_FILE).is_file():
            raise RosettaError(
                f"{where}: no tokenizer_class, so transformers reads an m2m_100 "
                f"folder's tokenizer as M2M100Tokenizer, which needs {VOCAB_FILE} "
                "(NLLB-200's names NllbTokenizer)"
            )
        return "m2m100"
    if kind not in TOKENIZERS:
        raise RosettaError(
            f"{where}: tokenizer_class {kind!r}; Rosetta reads {', '.join(TOKENIZERS)}"
        )
    return TOKENIZERS[kind]


def piece_table(
    model: bytes, tokens: list[str], languages: dict[str, str], path: Path
) -> PieceTableTokenizer:
    try:
        return PieceTableTokenizer(model, tokens, languages=languages)
    except (RuntimeError, OSError) as error:
        reason = in_words(error)
        raise RosettaError(f"{path}: not a SentencePiece model ({reason})") from None


def stack_tensors(
    weights: Weights, settings: MultilingualSettings
) -> dict[str, torch.Tensor]:
    """Each stack's final LayerNorm and, for mBART, its embeddings'
    LayerNorm and learned positions (less the two rows before the first
    position); a stored sinusoid table must be the one Rosetta computes."""
    found = {}
    width, rows = settings.d_model, settings.max_position_embeddings
    first = settings.pad_token_id + 1
    for side in ("encoder", "decoder"):
        for kind in ("weight", "bias"):
            found[f"{side}.final_norm.{kind}"] = norm_entry(
                weights, f"model.{side}.layer_norm.{kind}", width
            )
            if settings.mbart:
                found[f"{side}.embedding.norm.{kind}"] = norm_entry(
                    weights, f"model.{side}.layernorm_embedding.{kind}", width
                )
        name = f"model.{side}.embed_positions.weight"
        if settings.mbart:
            table = weights.take(name)
            if table.shape != (rows + first, width):
                raise RosettaError(
                    f"{weights.path}: {name} is {tuple(table.shape)}, not "
                    f"({rows + first}, {width}) (max_position_embeddings + 2, d_model)"
                )
            found[f"{side}.embedding.positions"] = table[first:]
            continue
        stored = weights.tensors.pop(f"model.{side}.embed_positions.weights", None)
        if stored is not None:
            expected = positional_encoding(rows + first, width, "fairseq")
            if stored.shape != expected.shape or not torch.allclose(
                stored.float(), expected, atol=1e-4, rtol=0
            ):
                raise RosettaError(
                    f"{weights.path}: model.{side}.embed_positions.weights is not "
                    "M2M100's sinusoid table; Rosetta computes its positions so"
                )
    return found


def norm_entry(weights: Weights, name: str, width: int) -> torch.Tensor:
    tensor = weights.take(name)
    if tensor.shape != (width,):
        raise RosettaError(
            f"{weights.path}: {name} is {tuple(tensor.shape)}, not ({width},)"
        )
    return tensor


def model_section(settings: MultilingualSettings, where: str) -> dict[str, Any]:
    """The Rosetta ``model`` section of ``config.json``."""
    mbart = settings.mbart
    return shared_section(settings, where) | {
        "norm": "pre",
        "share_embeddings": True,
        "tie_output": True,
        "positions": "learned" if mbart else "sinusoidal",
        "sinusoids": "fairseq",
        "first_position": settings.pad_token_id + 1,
        "scale_embeddings": settings.scale_embedding,
        "embedding_norm": mbart,
        "output_bias": mbart,
        "start_token": "eos",
    }


def run_config(path: Path, settings: MultilingualSettings) -> Config:
    """The Rosetta configuration of the model in ``path``, read as
    ``settings``: no languages of its own (a model of 200 must be told
    which; a corpus named by two codes, as fine-tuning's, makes them the
    run's defaults)."""
    data = {"src_lang": "src", "tgt_lang": "tgt"}
    model = model_section(settings, str(path / CONFIG_FILE))
    try:
        return config_from_dict(
            {"data": data, "model": model, "tokenizer": {"joint": True}},
            (TransformerConfig,),
            f"{path}: the configuration made from it",
        )
    except RosettaError as error:
        raise RosettaError(in_words(error)) from None


def search_settings(
    settings: MultilingualSettings, generation: GenerationSettings
) -> dict[str, Any]:
    """What the folder says search should do (its beams, length limit and
    penalty), from its config.json and generation_config.json."""
    kept = {"num_beams", "max_length", "length_penalty"}
    return {
        key: value
        for source_settings in (settings, generation)
        for key, value in source_settings.model_dump().items()
        if key in kept and value is not None
    }
