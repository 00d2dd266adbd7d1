"""The ids of the tokens after SentencePiece's pieces (language codes,
``<mask>``) in an NLLB-200 or mBART-50 folder without ``tokenizer.json``,
as ``transformers`` numbers them: it builds the tokenizer from
``sentencepiece.bpe.model`` and ``tokenizer_config.json``.

- mBART-50 (``MBart50Tokenizer``) puts its own list of 52 codes, then
  ``<mask>``, right after the pieces, whatever the folder lists;
- then each token not in the table yet is appended, in this order:
  ``added_tokens_decoder``'s (by id), ``<mask>``, then
  ``extra_special_tokens`` (else ``additional_special_tokens``;
  ``special_tokens_map.json`` is not read for them).

``transformers`` appends ``added_tokens_decoder``'s tokens rather than
placing them at the ids it writes; an id that differs from the one they get
is refused. So is an NLLB folder that writes no ids: ``transformers`` would
put ``<mask>`` before the codes, where NLLB-200's table has it after them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rosetta.errors import RosettaError
from rosetta.families.transformer.hf.multilingual.settings import TOKENIZER_JSON
from rosetta.families.transformer.hf.settings import TOKENIZER_CONFIG, read_object

MBART50 = """
ar_AR cs_CZ de_DE en_XX es_XX et_EE fi_FI fr_XX gu_IN hi_IN it_IT ja_XX kk_KZ
ko_KR lt_LT lv_LV my_MM ne_NP nl_XX ro_RO ru_RU si_LK tr_TR vi_VN zh_CN af_ZA
az_AZ bn_IN fa_IR he_IL hr_HR id_ID ka_GE km_KH mk_MK ml_IN mn_MN mr_IN pl_PL
ps_AF pt_XX sv_SE sw_KE ta_IN te_IN th_TH tl_XX uk_UA ur_PK xh_ZA gl_ES sl_SI
"""
MBART50_CODES = MBART50.split()
MASK = "<mask>"
# transformers names the fairseq ids 0-3 (and <mask>) after these fields
SPECIAL_NAMES = {
    "bos_token": "<s>",
    "cls_token": "<s>",
    "pad_token": "<pad>",
    "eos_token": "</s>",
    "sep_token": "</s>",
    "unk_token": "<unk>",
    "mask_token": MASK,
}


def token_text(value: Any) -> str | None:
    """A token as ``tokenizer_config.json`` writes it: text, or an
    ``AddedToken``'s fields with its ``content``."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def decoder_tokens(config: dict[str, Any], path: Path) -> dict[int, str]:
    """``added_tokens_decoder``: each id's token."""
    decoder = config.get("added_tokens_decoder") or {}
    if not isinstance(decoder, dict):
        raise RosettaError(f"{path}: added_tokens_decoder is not an object")
    found = {}
    for key, entry in decoder.items():
        content = token_text(entry) if isinstance(entry, dict) else None
        if not key.isdigit() or content is None:
            raise RosettaError(
                f"{path}: added_tokens_decoder {key!r} is not an id and a token"
            )
        found[int(key)] = content
    return found


def listed_tokens(config: dict[str, Any], path: Path) -> list[str]:
    """``extra_special_tokens``, else ``additional_special_tokens``, as
    transformers takes them (an empty list counts as none)."""
    for key in ("extra_special_tokens", "additional_special_tokens"):
        listed = config.get(key)
        if not listed:
            continue
        texts = [token_text(t) for t in listed] if isinstance(listed, list) else [None]
        if None in texts:
            raise RosettaError(f"{path}: {key} is not a list of tokens")
        return texts
    return []


def sentencepiece_ids(folder: Path, pieces: list[str], mbart50: bool) -> dict[int, str]:
    """The tokens after ``pieces`` (fairseq's specials and SentencePiece's
    pieces) by id, for a folder without ``tokenizer.json``."""
    path = folder / TOKENIZER_CONFIG
    config = read_object(path, required=False)
    for key, default in SPECIAL_NAMES.items():
        if key in config and token_text(config[key]) != default:
            raise RosettaError(
                f"{path}: {key} {config[key]!r}, not {default!r}; without "
                f"{TOKENIZER_JSON} Rosetta reads the default special tokens"
            )
    decoder = decoder_tokens(config, path)
    if not mbart50 and not decoder:
        raise RosettaError(
            f"{folder / TOKENIZER_JSON}: missing, and {TOKENIZER_CONFIG} has no "
            "added_tokens_decoder: NLLB's language-code ids are in neither "
            "(transformers would number <mask> before the codes, unlike the model)"
        )
    table = [*pieces, *MBART50_CODES, MASK] if mbart50 else list(pieces)
    known = set(table)
    appended = [decoder[i] for i in sorted(decoder)]
    for token in [*appended, MASK, *listed_tokens(config, path)]:
        if token not in known:
            known.add(token)
            table.append(token)
    ids = {token: i for i, token in reversed(list(enumerate(table)))}
    for token_id, token in sorted(decoder.items()):
        if ids[token] != token_id:
            raise RosettaError(
                f"{path}: added_tokens_decoder gives {token!r} id {token_id}; "
                f"without {TOKENIZER_JSON} transformers numbers it {ids[token]}"
            )
    return dict(enumerate(table[len(pieces) :], len(pieces)))
