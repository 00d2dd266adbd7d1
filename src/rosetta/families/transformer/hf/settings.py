"""What ``rosetta import hf`` reads from a MarianMT folder's JSON files, each
value checked by type and range before anything is sized from it.

A size written ``"6"``, ``6.0`` or ``true``, a negative id, a missing
``pad_token_id`` or a file nested too deep is one line naming the file and
the key (``rosetta.runtime.records``), never a traceback or an allocation
that does not end. Keys the conversion does not read are left as they are:
a ``config.json`` holds many.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, Strict

from rosetta.errors import RosettaError
from rosetta.runtime.limits import Count
from rosetta.runtime.records import Record, read_record

# the files of a MarianMT folder
CONFIG_FILE = "config.json"
GENERATION_FILE = "generation_config.json"
SAFETENSORS_FILE = "model.safetensors"
PICKLE_FILE = "pytorch_model.bin"
SOURCE_SPM, TARGET_SPM = "source.spm", "target.spm"
VOCAB_FILE, TARGET_VOCAB_FILE = "vocab.json", "target_vocab.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
# what a download fetches: everything above and the tokenizer files of the
# NLLB-200, M2M100 and mBART-50 models, nothing else (no other formats)
HUB_FILES = [
    "sentencepiece.bpe.model",
    "tokenizer.json",
    "special_tokens_map.json",
    CONFIG_FILE,
    GENERATION_FILE,
    SAFETENSORS_FILE,
    SOURCE_SPM,
    TARGET_SPM,
    VOCAB_FILE,
    TARGET_VOCAB_FILE,
    TOKENIZER_CONFIG,
]


# Positions are recomputed, not read, so nothing in the weights bounds their
# table; OPUS-MT models hold 512, and a bound far above that keeps the table
# one the memory check can weigh before it is made.
MAX_POSITIONS = 1 << 20

Id = Annotated[int, Strict(), Field(ge=0)]
Rate = Annotated[float, Strict(), Field(ge=0.0, lt=1.0, allow_inf_nan=False)]
Flag = Annotated[bool, Strict()]
Finite = Annotated[float, Strict(), Field(allow_inf_nan=False)]
Text = Annotated[str, Strict()]
Positions = Annotated[int, Strict(), Field(ge=1, le=MAX_POSITIONS)]


class SearchSettings(Record):
    """The search settings kept with an import and written back on export
    (``generation_config.json``'s, or an older ``config.json``'s)."""

    num_beams: Count | None = None
    max_length: Count | None = None
    length_penalty: Finite | None = None


class GenerationSettings(SearchSettings):
    """``generation_config.json``: besides the search settings, the ids that
    ``generate`` starts and stops with, which must be ``config.json``'s."""

    decoder_start_token_id: Id | None = None
    eos_token_id: Id | list[Id] | None = None


class MarianSettings(SearchSettings):
    """``config.json``: the sizes, ids and options the conversion reads,
    with ``transformers``' defaults for those an older file leaves out."""

    d_model: Count
    encoder_layers: Count
    decoder_layers: Count
    encoder_attention_heads: Count
    decoder_attention_heads: Count
    encoder_ffn_dim: Count
    decoder_ffn_dim: Count
    vocab_size: Count
    decoder_vocab_size: Count | None = None
    pad_token_id: Id
    eos_token_id: Id
    decoder_start_token_id: Id | None = None
    max_position_embeddings: Positions = 1024
    activation_function: Text = "gelu"
    scale_embedding: Flag = False
    share_encoder_decoder_embeddings: Flag = True
    tie_word_embeddings: Flag = True
    separate_vocabs: Flag = False
    dropout: Rate = 0.1
    attention_dropout: Rate = 0.0

    @property
    def target_vocab_size(self) -> int:
        """The decoder's rows: one table's when the two sides share it."""
        if self.share_encoder_decoder_embeddings:
            return self.vocab_size
        return self.decoder_vocab_size or self.vocab_size


class TokenizerSettings(Record):
    """``tokenizer_config.json``: the language codes, and whether the target
    side has a vocabulary of its own."""

    source_lang: Text | None = None
    target_lang: Text | None = None
    separate_vocabs: Flag = False


# each ``model_type`` Rosetta imports, as ``folder_layout`` names its folder
LAYOUTS = {
    "marian": "a MarianMT folder",
    "m2m_100": "an M2M100 or NLLB-200 folder",
    "mbart": "an mBART-50 folder",
}
# the two models of ``m2m_100`` told apart by their tokenizer's class
M2M_100_LAYOUTS = {"Nllb": "an NLLB-200 folder", "M2M100": "an M2M100 folder"}


def _named(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``, or {} for one that is not there or not
    an object: what a message may read of a folder without a second error."""
    try:
        return read_record(path, dict[str, Any], "a JSON object", follow_links=True)
    except (RosettaError, OSError):
        return {}


def folder_layout(folder: Path) -> str:
    """The layout of the model folder ``folder``, in words ("a MarianMT
    folder", "an NLLB-200 folder", ...), by its ``config.json``'s
    ``model_type`` and its tokenizer's class (M2M100 and NLLB-200 share
    ``m2m_100``): what a message about a file it lacks or holds wrongly
    names. "a Hugging Face model folder" where nothing there says."""
    config = _named(folder / CONFIG_FILE)
    kind = config.get("model_type")
    kind = kind if isinstance(kind, str) else ""  # a list is no key
    tokenizer = _named(folder / TOKENIZER_CONFIG).get("tokenizer_class")
    tokenizer = str(tokenizer or config.get("tokenizer_class") or "")
    for prefix, layout in M2M_100_LAYOUTS.items():
        if kind == "m2m_100" and tokenizer.startswith(prefix):
            return layout
    return LAYOUTS.get(kind, "a Hugging Face model folder")


def missing_file(path: Path) -> RosettaError:
    """The error for a file of a model folder that is not there, naming the
    folder's layout (``folder_layout``)."""
    return RosettaError(f"{path}: missing; {folder_layout(path.parent)} holds it")


def read_object(path: Path, required: bool = True) -> dict[str, Any]:
    """The JSON object in ``path`` (``{}`` for an optional file that is not
    there), parsed with a bound on nesting."""
    if not path.is_file():
        if required:
            raise missing_file(path)
        return {}
    # a Hub download is a folder of links into the Hugging Face cache
    return read_record(path, dict[str, Any], "a JSON object", follow_links=True)


def check_ids(settings: MarianSettings, path: Path) -> None:
    """The ids of ``config.json`` are rows of the tables they index."""
    for key, size in (
        ("pad_token_id", settings.vocab_size),
        ("eos_token_id", settings.vocab_size),
        ("decoder_start_token_id", settings.target_vocab_size),
    ):
        value = getattr(settings, key)
        if value is not None and value >= size:
            raise RosettaError(
                f"{path}: {key} {value} is not an id of a vocabulary of {size}"
            )


def check_generation(
    generation: GenerationSettings, settings: MarianSettings, path: Path
) -> None:
    """``generate`` starts from and stops at the ids that the import reads
    from ``config.json``; other ids would translate otherwise."""
    start = generation.decoder_start_token_id
    if start is not None and start != settings.pad_token_id:
        raise RosettaError(
            f"{path}: decoder_start_token_id {start} is not config.json's "
            f"pad_token_id {settings.pad_token_id}; Rosetta imports MarianMT "
            "models whose decoder starts from <pad>"
        )
    eos = generation.eos_token_id
    if eos is not None and eos not in (settings.eos_token_id, [settings.eos_token_id]):
        raise RosettaError(
            f"{path}: eos_token_id {eos} is not config.json's eos_token_id "
            f"{settings.eos_token_id}"
        )
