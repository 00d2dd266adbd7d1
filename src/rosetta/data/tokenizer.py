"""Tokenizers: SentencePiece (unigram or BPE) and a word-level one for teaching.

Both map text to ids of one vocabulary whose first ids are
``<pad>=0 <unk>=1 <bos>=2 <eos>=3``, and serialise to a JSON-ready dict so a
checkpoint carries everything needed to translate.
"""

from __future__ import annotations

import base64
import io
import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

import sentencepiece as spm

from rosetta.config.sections import TokenizerConfig
from rosetta.data.piece_table import LanguageTagged, PieceTableTokenizer
from rosetta.data.vocab import BOS, EOS, PAD, SPECIALS, UNK, Vocabulary
from rosetta.errors import RosettaError


class Tokenizer(Protocol):
    """Text <-> ids. Implementations: SentencePieceTokenizer, WordTokenizer,
    CharacterTokenizer, PieceTableTokenizer (``rosetta.data.piece_table``)."""

    def encode(self, text: str) -> list[int]: ...
    def encode_many(self, texts: list[str], threads: int = 1) -> list[list[int]]:
        """``encode`` of each text; a tokenizer may use ``threads`` threads."""
        ...

    def decode(self, ids: Iterable[int]) -> str: ...
    def pieces(self, text: str) -> list[str]: ...
    def id_pieces(self, ids: Iterable[int]) -> list[str]: ...
    def __len__(self) -> int: ...
    def to_dict(self) -> dict[str, Any]: ...


class SentencePieceTokenizer:
    """A trained SentencePiece model (its serialised bytes are the whole state)."""

    def __init__(self, model_bytes: bytes):
        self.model_bytes = model_bytes
        self.processor = spm.SentencePieceProcessor(model_proto=model_bytes)

    @classmethod
    def train(
        cls, sentences: Iterable[str], config: TokenizerConfig
    ) -> SentencePieceTokenizer:
        stream = io.BytesIO()
        text = (s for s in sentences if s.strip())  # streamed: any corpus size
        first = next(text, None)
        if first is None:
            raise RosettaError("cannot train a tokenizer on an empty corpus")
        # SentencePiece wraps an error raised while it reads (a bad corpus
        # line) in its own; keep ours and raise it as it was.
        reading_error: list[RosettaError] = []

        def read() -> Iterator[str]:
            try:
                yield from itertools.chain([first], text)
            except RosettaError as error:
                reading_error.append(error)

        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=read(),
                model_writer=stream,
                model_type=config.model_type,
                vocab_size=config.vocab_size,
                character_coverage=config.character_coverage,
                pad_id=0,
                unk_id=1,
                bos_id=2,
                eos_id=3,
                pad_piece=PAD,
                unk_piece=UNK,
                bos_piece=BOS,
                eos_piece=EOS,
                hard_vocab_limit=False,
                input_sentence_size=config.sample_sentences,
                shuffle_input_sentence=True,
                num_threads=2,
                minloglevel=2,
            )
        except RuntimeError as error:
            if reading_error:
                raise reading_error[0] from None
            raise RosettaError(f"SentencePiece training failed: {error}") from None
        if reading_error:
            raise reading_error[0]
        return cls(stream.getvalue())

    def encode(self, text: str) -> list[int]:
        return self.processor.encode(text)

    def encode_many(self, texts: list[str], threads: int = 1) -> list[list[int]]:
        return self.processor.encode(texts, num_threads=threads)

    def decode(self, ids: Iterable[int]) -> str:
        return self.processor.decode([i for i in ids if i >= len(SPECIALS)])

    def pieces(self, text: str) -> list[str]:
        return self.processor.encode(text, out_type=str)

    def id_pieces(self, ids: Iterable[int]) -> list[str]:
        return [self.processor.id_to_piece(i) for i in ids]

    def __len__(self) -> int:
        return self.processor.get_piece_size()

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "sentencepiece",
            "model": base64.b64encode(self.model_bytes).decode("ascii"),
        }


_WORD_PATTERN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


class WordTokenizer:
    """Lower-case, split words from punctuation, look words up in a Vocabulary."""

    def __init__(self, vocab: Vocabulary):
        self.vocab = vocab

    @staticmethod
    def split(text: str) -> list[str]:
        return _WORD_PATTERN.findall(text.lower())

    @classmethod
    def train(cls, sentences: Iterable[str], config: TokenizerConfig) -> WordTokenizer:
        vocab = Vocabulary.build(
            (cls.split(s) for s in sentences),
            min_freq=config.min_freq,
            max_size=config.vocab_size,
        )
        if len(vocab) == len(SPECIALS):
            raise RosettaError("cannot train a tokenizer on an empty corpus")
        return cls(vocab)

    def encode(self, text: str) -> list[int]:
        return self.vocab.to_ids(self.split(text))

    def encode_many(self, texts: list[str], threads: int = 1) -> list[list[int]]:
        return [self.encode(text) for text in texts]

    def decode(self, ids: Iterable[int]) -> str:
        return " ".join(self.vocab.to_tokens(i for i in ids if i >= len(SPECIALS)))

    def pieces(self, text: str) -> list[str]:
        return self.split(text)

    def id_pieces(self, ids: Iterable[int]) -> list[str]:
        return self.vocab.to_tokens(ids)

    def __len__(self) -> int:
        return len(self.vocab)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "word", "tokens": self.vocab.tokens}


class CharacterTokenizer:
    """One token per character (after the special symbols), for character
    language models; characters never seen in training become ``<unk>``."""

    def __init__(self, vocab: Vocabulary):
        self.vocab = vocab

    @classmethod
    def train(cls, texts: Iterable[str]) -> CharacterTokenizer:
        seen: set[str] = set()
        for text in texts:
            seen.update(text)
        characters = sorted(seen)
        if not characters:
            raise RosettaError("cannot train a tokenizer on an empty corpus")
        return cls(Vocabulary([*SPECIALS, *characters]))

    def encode(self, text: str) -> list[int]:
        return self.vocab.to_ids(list(text))

    def encode_many(self, texts: list[str], threads: int = 1) -> list[list[int]]:
        return [self.encode(text) for text in texts]

    def decode(self, ids: Iterable[int]) -> str:
        return "".join(self.vocab.to_tokens(i for i in ids if i >= len(SPECIALS)))

    def pieces(self, text: str) -> list[str]:
        return list(text)

    def id_pieces(self, ids: Iterable[int]) -> list[str]:
        return self.vocab.to_tokens(ids)

    def __len__(self) -> int:
        return len(self.vocab)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "char", "tokens": self.vocab.tokens}


def train_tokenizer(sentences: Iterable[str], config: TokenizerConfig) -> Tokenizer:
    if config.kind == "sentencepiece":
        return SentencePieceTokenizer.train(sentences, config)
    if config.kind == "char":
        return CharacterTokenizer.train(sentences)
    return WordTokenizer.train(sentences, config)


def tokenizer_from_dict(state: dict[str, Any]) -> Tokenizer:
    kind = state.get("kind")
    if kind == "sentencepiece":
        return SentencePieceTokenizer(base64.b64decode(state["model"]))
    if kind == "word":
        return WordTokenizer(Vocabulary(state["tokens"]))
    if kind == "char":
        return CharacterTokenizer(Vocabulary(state["tokens"]))
    if kind == "sentencepiece-table":
        return PieceTableTokenizer.from_dict(state)
    raise RosettaError(f"unknown tokenizer kind {kind!r}")


class TokenizerPair:
    """The source and target tokenizers (one shared object when joint)."""

    def __init__(self, src: Tokenizer, tgt: Tokenizer):
        self.src = src
        self.tgt = tgt

    @property
    def joint(self) -> bool:
        return self.src is self.tgt

    def tagged(
        self, source: str, target: str
    ) -> tuple[TokenizerPair, list[str]] | None:
        """For a model that tags both sides (NLLB-200, M2M100, mBART-50):
        the pair that starts each source with the token of ``source`` and
        each target with that of ``target`` (``data.src_lang``,
        ``data.tgt_lang``), and the two codes; None for other models."""
        src, tgt = self.src, self.tgt
        if not isinstance(src, PieceTableTokenizer) or not src.tags_both_sides:
            return None
        assert isinstance(tgt, PieceTableTokenizer)
        for key, code in (("src_lang", source), ("tgt_lang", target)):
            if code not in src.languages:
                shown = ", ".join(list(src.languages)[:40])
                raise RosettaError(
                    f"data.{key} {code!r} is not a language of the model; name "
                    f"the corpus's languages by its codes ({shown}, ...)"
                )
        pair = TokenizerPair(
            LanguageTagged(src, src.language_id(source)),
            LanguageTagged(tgt, tgt.language_id(target)),
        )
        return pair, [source, target]

    @classmethod
    def train(
        cls, pairs: list[tuple[str, str]], config: TokenizerConfig
    ) -> TokenizerPair:
        return cls.train_streamed(lambda: iter(pairs), config)

    @classmethod
    def train_streamed(
        cls, read: Callable[[], Iterator[tuple[str, str]]], config: TokenizerConfig
    ) -> TokenizerPair:
        """Trained on the pairs ``read()`` yields, without holding them: one
        reading for a joint vocabulary, one per side otherwise."""
        if config.joint:
            texts = (text for pair in read() for text in pair)
            shared = train_tokenizer(texts, config)
            return cls(shared, shared)
        return cls(
            train_tokenizer((s for s, _ in read()), config),
            train_tokenizer((t for _, t in read()), config),
        )

    def to_dict(self) -> dict[str, Any]:
        if self.joint:
            return {"joint": self.src.to_dict()}
        return {"src": self.src.to_dict(), "tgt": self.tgt.to_dict()}

    @classmethod
    def from_dict(cls, state: Any, where: str = "tokenizers") -> TokenizerPair:
        """The pair ``to_dict`` wrote; anything else (cut, edited, another
        program's) is one error naming ``where``."""
        try:
            if "joint" in state:
                shared = tokenizer_from_dict(state["joint"])
                return cls(shared, shared)
            src, tgt = (
                tokenizer_from_dict(state["src"]),
                tokenizer_from_dict(state["tgt"]),
            )
        except RosettaError as error:
            raise RosettaError(f"{where}: {error}") from None
        except (KeyError, TypeError, ValueError, AttributeError, RuntimeError, OSError):
            raise RosettaError(
                f"{where}: tokenizers that cannot be loaded (not what Rosetta "
                "saves: cut short, edited, or another program's)"
            ) from None
        return cls(src, tgt)
