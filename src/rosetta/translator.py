"""The Python API: ``Translator.load(path).translate(sentences)``."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from pathlib import Path

import torch

from rosetta.config import Config, config_from_dict
from rosetta.data.tokenizer import TokenizerPair
from rosetta.decode.batched import decode_in_batches
from rosetta.models.build import build_model
from rosetta.models.interface import EncoderDecoder
from rosetta.train import checkpoint as ckpt


class Translator:
    """A trained model with its tokenizers, ready to translate text.

    Example::

        translator = Translator.load("runs/multi30k-de-en-transformer")
        translator.translate(["Ein Hund läuft im Schnee."])
    """

    def __init__(
        self,
        model: EncoderDecoder,
        tokenizers: TokenizerPair,
        config: Config,
        device: torch.device,
    ):
        self.model = model.to(device).eval()
        self.tokenizers = tokenizers
        self.config = config
        self.device = device

    @classmethod
    def load(
        cls,
        path: str | Path,
        device: str | torch.device | None = None,
        which: str = "best",
    ) -> Translator:
        """Load a run folder (its best checkpoint) or one checkpoint folder."""
        folder = ckpt.resolve_checkpoint(Path(path), which)
        meta = ckpt.read_meta(folder)
        config = config_from_dict(meta["config"], str(folder / ckpt.META_FILE))
        tokenizers = TokenizerPair.from_dict(meta["tokenizers"])
        model = build_model(config.model, len(tokenizers.src), len(tokenizers.tgt))
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        device = torch.device(device)
        ckpt.load_weights(folder, model, device)
        return cls(model, tokenizers, config, device)

    def _encode(self, sentence: str) -> list[int]:
        limit = min(
            self.config.decode.max_input_tokens, self.config.model.max_positions
        )
        ids = self.tokenizers.src.encode(sentence)
        if len(ids) + 1 > limit:
            warnings.warn(
                f"input of {len(ids)} tokens truncated to {limit - 1} "
                "(decode.max_input_tokens)",
                stacklevel=3,
            )
            ids = ids[: limit - 1]
        return ids

    @torch.no_grad()
    def translate(
        self,
        sentences: Iterable[str],
        *,
        max_len_a: float | None = None,
        max_len_b: int | None = None,
        batch_size: int | None = None,
    ) -> list[str]:
        """Translate sentences; one output per input, in order (empty in, empty out)."""
        decode = self.config.decode
        sentences = list(sentences)
        outputs = [""] * len(sentences)
        sources = {i: self._encode(s) for i, s in enumerate(sentences) if s.strip()}
        hypotheses = decode_in_batches(
            self.model,
            list(sources.values()),
            self.device,
            batch_size=batch_size or decode.batch_size,
            max_len_a=decode.max_len_a if max_len_a is None else max_len_a,
            max_len_b=decode.max_len_b if max_len_b is None else max_len_b,
            max_len_cap=self.config.model.max_positions,
        )
        for i, hypothesis in zip(sources, hypotheses, strict=True):
            text = self.tokenizers.tgt.decode(hypothesis.tokens)
            outputs[i] = " ".join(text.split())  # one line, whatever it holds
        return outputs
