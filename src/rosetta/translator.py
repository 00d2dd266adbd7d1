"""The Python API: ``Translator.load(path).translate(sentences)``."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from rosetta import checkpoint as ckpt
from rosetta.config import Config, TransformerConfig, config_from_dict
from rosetta.data.tokenizer import TokenizerPair
from rosetta.data.vocab import EOS
from rosetta.decode.batched import Workers, decode_in_batches
from rosetta.decode.greedy import Hypothesis
from rosetta.decode.options import SearchOptions
from rosetta.models.build import build_model
from rosetta.models.interface import EncoderDecoder
from rosetta.models.packed import pack_for_inference
from rosetta.precision import (
    AUTOCAST_DTYPES,
    Precision,
    autocast,
    check_precision,
    quantize_int8,
)


class Translator:
    """A trained model with its tokenizers, ready to translate text.

    Example::

        translator = Translator.load("runs/multi30k-de-en-transformer")
        translator.translate(["Ein Hund läuft im Schnee."])

    The translator decodes with a model made ready for inference when it is
    built: int8-quantized, or a Transformer packed for fast one-token steps
    (``pack_for_inference``). Both are copies: changing the given model's
    weights afterwards does not change what this translator produces; build a
    new one to translate with them.
    """

    def __init__(
        self,
        model: EncoderDecoder,
        tokenizers: TokenizerPair,
        config: Config,
        device: torch.device,
        precision: Precision = "fp32",
        packed: bool = True,
    ):
        """``packed=False`` decodes through the layers only (for comparison)."""
        check_precision(device, precision)
        model = model.to(device).eval()
        if precision == "int8":
            model = quantize_int8(model)
        elif packed:
            model = pack_for_inference(model, AUTOCAST_DTYPES.get(precision))
        self.model = model
        self.tokenizers = tokenizers
        self.config = config
        self.device = device
        self.precision = precision

    @classmethod
    def load(
        cls,
        path: str | Path,
        device: str | torch.device | None = None,
        which: str = "best",
        precision: Precision = "fp32",
        packed: bool = True,
    ) -> Translator:
        """Load a run folder (its best checkpoint) or one checkpoint folder.

        ``precision="bf16"`` decodes with bfloat16 matrix products, ``"int8"``
        with int8 linear layers on the CPU (``rosetta.precision``); the
        default is float32.
        """
        folder = ckpt.resolve_checkpoint(Path(path), which)
        meta = ckpt.read_meta(folder)
        config = config_from_dict(meta["config"], str(folder / ckpt.META_FILE))
        tokenizers = TokenizerPair.from_dict(meta["tokenizers"])
        model = build_model(config.model, len(tokenizers.src), len(tokenizers.tgt))
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        device = torch.device(device)
        check_precision(device, precision)
        ckpt.load_weights(folder, model, device)
        return cls(model, tokenizers, config, device, precision, packed)

    @property
    def position_limit(self) -> int | None:
        """The longest sequence the model can encode or decode (Transformer)."""
        model = self.config.model
        return model.max_positions if isinstance(model, TransformerConfig) else None

    def encode(self, sentence: str) -> list[int]:
        """Source token ids of ``sentence`` (without ``<eos>``), cut to what the
        model takes, with a warning; a blank line gives none."""
        limits = {"decode.max_input_tokens": self.config.decode.max_input_tokens}
        if self.position_limit is not None:
            limits["model.max_positions"] = self.position_limit
        setting, limit = min(limits.items(), key=lambda item: item[1])
        ids = self.tokenizers.src.encode(sentence) if sentence.strip() else []
        if len(ids) + 1 > limit:  # + 1 for <eos>
            warnings.warn(
                f"input of {len(ids)} tokens truncated to {limit - 1} ({setting})",
                stacklevel=2,
            )
            ids = ids[: limit - 1]
        return ids

    def complete(self, options: SearchOptions | None = None) -> SearchOptions:
        """``options`` (default: greedy search) with an unset length limit
        taken from the model's configuration."""
        return (options or SearchOptions()).with_length_limit(self.config.decode)

    def translate(
        self,
        sentences: Iterable[str],
        options: SearchOptions | None = None,
        *,
        batch_size: int | None = None,
        workers: Workers = 1,
    ) -> list[str]:
        """Translate sentences; one output per input, in order (empty in, empty out).

        ``options`` says how to search (``SearchOptions``; default: greedy,
        with the model's configured length limit). ``workers`` > 1 decodes that
        many batches at once on the CPU, sharing torch's threads among them;
        ``"auto"`` one per thread where that applies (``auto_workers``).
        """
        results = self.translate_nbest(
            sentences, options, batch_size=batch_size, workers=workers
        )
        return [found[0].text if found else "" for found in results]

    def translate_nbest(
        self,
        sentences: Iterable[str],
        options: SearchOptions | None = None,
        *,
        batch_size: int | None = None,
        workers: Workers = 1,
    ) -> list[list[Translation]]:
        """Per input, its n-best list of ``Translation`` (empty for a blank
        line); the arguments are those of ``translate``."""
        sources = [self.encode(sentence) for sentence in sentences]
        return self.translate_ids(
            sources, options, batch_size=batch_size, workers=workers
        )

    @torch.no_grad()
    def translate_ids(
        self,
        sources: list[list[int]],
        options: SearchOptions | None = None,
        *,
        batch_size: int | None = None,
        workers: Workers = 1,
    ) -> list[list[Translation]]:
        """``translate_nbest`` of sentences already encoded (``encode``): one
        n-best list per id list, none for an empty one (a blank line)."""
        options = self.complete(options)
        nonempty = {i: ids for i, ids in enumerate(sources) if ids}
        with autocast(self.device, self.precision):
            found = decode_in_batches(
                self.model,
                list(nonempty.values()),
                self.device,
                batch_size=batch_size or self.config.decode.batch_size,
                options=options,
                max_len_cap=self.position_limit,
                workers=workers,
            )
        results: list[list[Translation]] = [[] for _ in sources]
        for i, source, hypotheses in zip(
            nonempty, nonempty.values(), found, strict=True
        ):
            source_pieces = [*self.tokenizers.src.id_pieces(source), EOS]
            results[i] = [self._translation(h, source_pieces) for h in hypotheses]
        return results

    def _translation(
        self, hypothesis: Hypothesis, source_pieces: list[str]
    ) -> Translation:
        text = self.tokenizers.tgt.decode(hypothesis.tokens)
        return Translation(
            text=" ".join(text.split()),  # one line, whatever it holds
            score=hypothesis.score,
            normalized_score=hypothesis.normalized_score,
            token_ids=hypothesis.tokens,
            tokens=self.tokenizers.tgt.id_pieces(hypothesis.tokens),
            source_tokens=source_pieces,
            attention=hypothesis.attention,
        )


@dataclass
class Translation:
    """One hypothesis for one input.

    ``attention`` (when asked for) has one row per scored output token (the
    tokens, then ``</s>`` if it was produced), per layer and head, over
    ``source_tokens``: shape (L, layers, heads, S).
    """

    text: str
    score: float  # Σ log P(y_t | y_<t, c), <eos> included when produced
    normalized_score: float | None  # what beam search ranked by
    token_ids: list[int]
    tokens: list[str]
    source_tokens: list[str]
    attention: torch.Tensor | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: attention as nested lists rounded to 4 decimals."""
        record: dict[str, Any] = {
            "text": self.text,
            "score": self.score,
            "normalized_score": self.normalized_score,
            "token_ids": self.token_ids,
            "tokens": self.tokens,
            "source_tokens": self.source_tokens,
        }
        if self.attention is not None:
            record["attention"] = torch.round(self.attention, decimals=4).tolist()
        return record
