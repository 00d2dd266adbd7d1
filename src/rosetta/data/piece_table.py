"""SentencePiece pieces looked up in a fixed token table: the tokenizer of
models whose ids are not SentencePiece's own (the MarianMT models, whose
source and target have their own SentencePiece models and one table).

A text is cut into pieces by the SentencePiece model, and each piece is
looked up in the table (a piece not in it is ``<unk>``). A leading language
token such as ``>>fra<<`` (a multilingual model's target language) is kept
whole, in front of the pieces. Decoding joins the pieces of the ordinary ids
and lets SentencePiece turn them back into text.
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
    ):
        self.model_bytes = model_bytes
        self.decode_model_bytes = decode_model_bytes
        self.processor = loaded(model_bytes)
        self.decoder = self.processor
        if decode_model_bytes is not None:
            self.decoder = loaded(decode_model_bytes)
        self.vocab = Vocabulary(tokens)

    @property
    def language_codes(self) -> list[str]:
        """The codes of the table's ``>>xxx<<`` tokens (a multilingual model's
        target languages), in table order."""
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
        pieces = self.vocab.to_tokens(i for i in ids if i >= len(SPECIALS))
        return self.decoder.decode_pieces(pieces).replace("\u2581", " ").strip()

    def pieces(self, text: str) -> list[str]:
        code, rest = split_language_token(text)
        return code + self.processor.encode(rest, out_type=str)

    def id_pieces(self, ids: Iterable[int]) -> list[str]:
        return self.vocab.to_tokens(ids)

    def __len__(self) -> int:
        return len(self.vocab)

    def to_dict(self) -> dict[str, Any]:
        state = {
            "kind": "sentencepiece-table",
            "model": base64.b64encode(self.model_bytes).decode("ascii"),
            "tokens": self.vocab.tokens,
        }
        if self.decode_model_bytes is not None:
            state["decode_model"] = base64.b64encode(self.decode_model_bytes).decode(
                "ascii"
            )
        return state

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> PieceTableTokenizer:
        decode_model = state.get("decode_model")
        tokens = state["tokens"]
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise RosettaError("a piece table's tokens are not a list of strings")
        return cls(
            base64.b64decode(state["model"]),
            tokens,
            None if decode_model is None else base64.b64decode(decode_model),
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
