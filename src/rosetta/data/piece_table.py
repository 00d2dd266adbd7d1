"""SentencePiece pieces looked up in a fixed token table: the tokenizer of
models whose ids are not SentencePiece's own (the MarianMT models, whose
source and target have their own SentencePiece models and one table).

A text is cut into pieces by the SentencePiece model, and each piece is
looked up in the table (a piece not in it is ``<unk>``). A leading language
token such as ``>>fra<<`` (a MarianMT model's target language) is kept
whole, in front of the pieces. Decoding joins the pieces of the ordinary ids
and lets SentencePiece turn them back into text.

``languages``: the language codes of a model that tags both sides (NLLB-200,
M2M100, mBART-50) and their tokens (``deu_Latn``, ``__de__``); the
translator puts the source language's token before the source and forces
the target language's as the first output token, which decoding leaves out.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

import sentencepiece as spm

from rosetta.data.vocab import SPECIALS, Vocabulary
from rosetta.errors import RosettaError


def language_token(code: str) -> str:
    """``fra`` -> ``>>fra<<``, a multilingual model's target-language token."""
    return f">>{code}<<"


def split_language_token(text: str) -> tuple[list[str], str]:
    """A leading ``>>xxx<<`` and the rest of ``text``."""
    if text.startswith(">>") and (end := text.find("<<")) != -1:
        return [text[: end + 2]], text[end + 2 :]
    return [], text


class PieceTableTokenizer:
    """Pieces of the SentencePiece model ``model_bytes``, ids of ``tokens``
    (a token list that starts with Rosetta's four special symbols).

    ``decode_model_bytes``: the SentencePiece model that turns pieces back
    into text, if not ``model_bytes`` (a MarianMT target decodes with its
    source model where both sides share one table, as ``transformers``
    does)."""

    def __init__(
        self,
        model_bytes: bytes,
        tokens: list[str],
        decode_model_bytes: bytes | None = None,
        languages: dict[str, str] | None = None,
    ):
        self.model_bytes = model_bytes
        self.decode_model_bytes = decode_model_bytes
        self.processor = loaded(model_bytes)
        self.decoder = self.processor
        if decode_model_bytes is not None:
            self.decoder = loaded(decode_model_bytes)
        self.vocab = Vocabulary(tokens)
        self.languages = dict(languages or {})
        missing = [t for t in self.languages.values() if t not in self.vocab.index]
        if missing:
            raise RosettaError(f"the language token {missing[0]!r} is not in the table")
        self._language_ids = {self.vocab.index[t] for t in self.languages.values()}

    @property
    def tags_both_sides(self) -> bool:
        """Whether sources start with their language's token and outputs
        with theirs (``languages``), rather than a ``>>xxx<<`` in the text."""
        return bool(self.languages)

    def language_id(self, code: str) -> int:
        """The id of the language ``code``'s token (``languages``)."""
        return self.vocab.index[self.languages[code]]

    @property
    def language_codes(self) -> list[str]:
        """The codes of the languages: ``languages``', or those of the
        table's ``>>xxx<<`` tokens (a MarianMT model's target languages), in
        table order."""
        if self.languages:
            return list(self.languages)
        return [
            token[2:-2]
            for token in self.vocab.tokens
            if token.startswith(">>") and token.endswith("<<") and len(token) > 4
        ]

    def encode(self, text: str) -> list[int]:
        code, rest = split_language_token(text)
        return self.vocab.to_ids(code + self.processor.encode(rest, out_type=str))

    def encode_many(self, texts: list[str], threads: int = 1) -> list[list[int]]:
        return [self.encode(text) for text in texts]

    def decode(self, ids: Iterable[int]) -> str:
        pieces = self.vocab.to_tokens(
            i for i in ids if i >= len(SPECIALS) and i not in self._language_ids
        )
        return self.decoder.decode_pieces(pieces).replace("\u2581", " ").strip()

    def pieces(self, text: str) -> list[str]:
        code, rest = split_language_token(text)
        return code + self.processor.encode(rest, out_type=str)

    def id_pieces(self, ids: Iterable[int]) -> list[str]:
        return self.vocab.to_tokens(ids)

    def __len__(self) -> int:
        return len(self.vocab)

    def to_dict(self) -> dict[str, Any]:
        state: dict[str, object] = {
            "kind": "sentencepiece-table",
            "model": base64.b64encode(self.model_bytes).decode("ascii"),
            "tokens": self.vocab.tokens,
        }
        if self.decode_model_bytes is not None:
            state["decode_model"] = base64.b64encode(self.decode_model_bytes).decode(
                "ascii"
            )
        if self.languages:
            state["languages"] = self.languages
        return state

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> PieceTableTokenizer:
        decode_model = state.get("decode_model")
        tokens = state["tokens"]
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise RosettaError("a piece table's tokens are not a list of strings")
        languages = state.get("languages", {})
        if not isinstance(languages, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in languages.items()
        ):
            raise RosettaError("a piece table's languages are not codes to tokens")
        return cls(
            base64.b64decode(state["model"]),
            tokens,
            None if decode_model is None else base64.b64decode(decode_model),
            languages,
        )


def loaded(model_bytes: bytes) -> spm.SentencePieceProcessor:
    """A SentencePiece model from its bytes; ``RuntimeError`` for bytes that
    hold none (an empty file loads without complaint, and fails at first use)."""
    if not model_bytes:
        raise RuntimeError("an empty file")
    processor = spm.SentencePieceProcessor(model_proto=model_bytes)
    if processor.vocab_size() == 0:  # pragma: no cover - protobuf refuses first
        raise RuntimeError("a model without pieces")
    return processor


class LanguageTagged:
    """A tokenizer whose every encoded text starts with one language's token
    (``language_id``): how a model that tags both sides (``languages``)
    reads a corpus of one pair, in training as in translation. Everything
    but encoding is the wrapped tokenizer's, which is what a run saves."""

    def __init__(self, tokenizer: PieceTableTokenizer, language_id: int):
        self.tokenizer, self.language_id = tokenizer, language_id

    def encode(self, text: str) -> list[int]:
        return [self.language_id, *self.tokenizer.encode(text)]

    def encode_many(self, texts: list[str], threads: int = 1) -> list[list[int]]:
        return [self.encode(text) for text in texts]

    def decode(self, ids: Iterable[int]) -> str:
        return self.tokenizer.decode(ids)

    def pieces(self, text: str) -> list[str]:
        return self.tokenizer.pieces(text)

    def id_pieces(self, ids: Iterable[int]) -> list[str]:
        return self.tokenizer.id_pieces(ids)

    def __len__(self) -> int:
        return len(self.tokenizer)

    def to_dict(self) -> dict[str, Any]:
        return self.tokenizer.to_dict()
