"""The token table of an NLLB-200, M2M100 or mBART-50 folder: every id's
piece, and the ids of the language codes.

Their tokenizers cut text with one SentencePiece model
(``sentencepiece.bpe.model``) and look the pieces up in a table:

- NLLB-200 and mBART-50 (fairseq's layout): ``<s>`` 0, ``<pad>`` 1,
  ``</s>`` 2, ``<unk>`` 3, then SentencePiece's pieces, each at its
  SentencePiece id + 1 (the fairseq offset), then the language codes
  (``deu_Latn``, ``de_DE``) and ``<mask>``;
- M2M100: ``vocab.json``'s pieces, then the language codes ``__de__`` of
  the list ``tokenizer_config.json`` names (``language_codes``: the 100 of
  ``m2m100`` or the 8 of ``wmt21``), as ``transformers`` numbers them.

NLLB's and mBART's tokens after the pieces are read with their ids from
``tokenizer.json`` (``added_tokens``), or, without it, numbered as
``transformers`` numbers them (``sentencepiece_ids``). A table shorter than
the embedding is padded with tokens no text produces (NLLB's embedding has
two rows more than its tokenizer has ids; M2M100's eight ``madeupword``
rows).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sentencepiece as spm

from rosetta.errors import RosettaError, in_words
from rosetta.families.transformer.hf.multilingual.sentencepiece_ids import (
    sentencepiece_ids,
)
from rosetta.families.transformer.hf.multilingual.settings import (
    SPM_FILE,
    TOKENIZER_JSON,
)
from rosetta.families.transformer.hf.settings import (
    TOKENIZER_CONFIG,
    VOCAB_FILE,
    read_object,
)

FAIRSEQ_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")
NOT_LANGUAGES = {*FAIRSEQ_SPECIALS, "<mask>"}
# M2M100's codes are written __de__; NLLB's deu_Latn and mBART's de_DE as they are
WRAPPED = re.compile(r"__(.+)__")
UNUSED = "<unused{}>"  # a row past the tokenizer's ids
M2M100 = """
af am ar ast az ba be bg bn br bs ca ceb cs cy da de el en es et fa ff fi fr
fy ga gd gl gu ha he hi hr ht hu hy id ig ilo is it ja jv ka kk km kn ko lb
lg ln lo lt lv mg mk ml mn mr ms my ne nl no ns oc or pa pl ps pt ro ru sd
si sk sl so sq sr ss su sv sw ta th tl tn tr uk ur uz vi wo xh yi yo zh zu
"""
WMT21 = "en ha is ja cs ru zh de"
M2M100_CODES = {"m2m100": M2M100.split(), "wmt21": WMT21.split()}


@dataclass(frozen=True)
class TokenTable:
    """Each id's piece (``pieces[i]``) and each language code's id."""

    pieces: list[str]
    languages: dict[str, int]


def spm_processor(model: bytes, path: Path) -> spm.SentencePieceProcessor:
    try:
        if not model:
            raise RuntimeError("an empty file")
        return spm.SentencePieceProcessor(model_proto=model)
    except (RuntimeError, OSError) as error:
        reason = in_words(error)
        raise RosettaError(f"{path}: not a SentencePiece model ({reason})") from None


def base_pieces(folder: Path, model: bytes, m2m: bool) -> list[str]:
    """The pieces before the added tokens, in id order."""
    if m2m:
        path = folder / VOCAB_FILE
        vocab = read_object(path)
        ids = list(vocab.values())
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids) or (
            sorted(ids) != list(range(len(ids)))
        ):
            raise RosettaError(f"{path}: ids that are not 0..{len(ids) - 1}, one each")
        return [piece for piece, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    processor = spm_processor(model, folder / SPM_FILE)
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    # SentencePiece's <unk> <s> </s> are fairseq's 3 0 2; its other pieces +1
    return [*FAIRSEQ_SPECIALS, *pieces[3:]]


def m2m100_tokens(folder: Path, after: int) -> dict[int, str]:
    """M2M100's language tokens by id: its list's, after the pieces."""
    path = folder / TOKENIZER_CONFIG
    name = read_object(path, required=False).get("language_codes", "m2m100")
    if not isinstance(name, str) or name not in M2M100_CODES:
        raise RosettaError(
            f"{path}: language_codes {name!r}; M2M100 has {' or '.join(M2M100_CODES)}"
        )
    return {after + i: f"__{code}__" for i, code in enumerate(M2M100_CODES[name])}


def json_tokens(path: Path) -> dict[int, str]:
    """``tokenizer.json``'s ``added_tokens`` (language codes, ``<mask>``)
    by id."""
    entries = read_object(path).get("added_tokens", [])
    if not isinstance(entries, list):
        raise RosettaError(f"{path}: added_tokens is not a list")
    found = {}
    for entry in entries:
        if not isinstance(entry, dict) or not valid_added(
            entry.get("id"), entry.get("content")
        ):
            raise RosettaError(
                f"{path}: an added token without a whole-number id and text"
            )
        token_id, content = entry["id"], entry["content"]
        if found.get(token_id, content) != content:  # one would be lost
            raise RosettaError(
                f"{path}: added_tokens gives id {token_id} to both "
                f"{found[token_id]!r} and {content!r}"
            )
        found[token_id] = content
    return found


def added_tokens(folder: Path, pieces: list[str], family: str) -> dict[int, str]:
    """The tokens after the pieces (language codes, ``<mask>``) by id."""
    if family == "m2m100":
        return m2m100_tokens(folder, len(pieces))
    if (folder / TOKENIZER_JSON).is_file():
        return json_tokens(folder / TOKENIZER_JSON)
    return sentencepiece_ids(folder, pieces, family == "mbart50")


def valid_added(key: Any, content: Any) -> bool:
    return (
        isinstance(key, int)
        and not isinstance(key, bool)
        and key >= 0
        and isinstance(content, str)
    )


def read_token_table(folder: Path, model: bytes, family: str, rows: int) -> TokenTable:
    """The table of the folder's tokenizer (``family``: ``nllb``,
    ``mbart50`` or ``m2m100``) for an embedding of ``rows``."""
    pieces = base_pieces(folder, model, family == "m2m100")
    base = len(pieces)
    for token_id, token in sorted(added_tokens(folder, pieces, family).items()):
        if token_id < len(pieces):
            if pieces[token_id] != token:
                raise RosettaError(
                    f"{folder}: the tokenizer's token {token!r} has id {token_id}, "
                    f"which is the piece {pieces[token_id]!r}"
                )
            continue
        if token_id >= rows:  # checked before any list grows to it
            raise RosettaError(
                f"{folder}: the tokenizer's token {token!r} has id {token_id:,}; "
                f"the embedding has {rows:,} rows (vocab_size); the tokenizer "
                "does not match the model"
            )
        pieces += [UNUSED.format(i) for i in range(len(pieces), token_id)]
        pieces.append(token)
    if len(pieces) > rows:
        raise RosettaError(
            f"{folder}: the tokenizer has {len(pieces):,} ids; the embedding "
            f"has {rows:,} rows (vocab_size); the tokenizer does not match the model"
        )
    pieces += [UNUSED.format(i) for i in range(len(pieces), rows)]
    if len(set(pieces)) != len(pieces):
        twice = next(p for p in pieces if pieces.count(p) > 1)
        raise RosettaError(f"{folder}: the tokenizer holds {twice!r} twice")
    languages = {}
    for token_id in range(base, len(pieces)):
        token = pieces[token_id]
        if token in NOT_LANGUAGES or token.startswith(("madeupword", "<unused")):
            continue
        wrapped = WRAPPED.fullmatch(token)
        languages[wrapped.group(1) if wrapped else token] = token_id
    if not languages:
        raise RosettaError(f"{folder}: the tokenizer has no language codes")
    return TokenTable(pieces, languages)
