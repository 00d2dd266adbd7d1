"""The Python API: ``Translator.load(path).translate(sentences)``."""

from __future__ import annotations

from pathlib import Path

import torch

from rosetta import checkpoint as ckpt
from rosetta.config import Config, config_from_dict
from rosetta.data.tokenizer import TokenizerPair
from rosetta.data.vocab import EOS
from rosetta.decode.batched import Workers, decode_in_batches
from rosetta.decode.options import SearchOptions
from rosetta.devices import parse_device, pick_device
from rosetta.errors import RosettaError
from rosetta.models.build import build_model
from rosetta.models.interface import EncoderDecoder
from rosetta.models.nat import NonAutoregressiveTransformer
from rosetta.models.packed import pack_for_inference
from rosetta.nat_translator import NATTranslator
from rosetta.precision import (
    AUTOCAST_DTYPES,
    Precision,
    autocast,
    check_precision,
    quantize_int8,
)
from rosetta.translation import TextTranslator, Translation


class Translator(TextTranslator):
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

    engine = "rosetta"

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

    @property
    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    @classmethod
    def load(
        cls,
        path: str | Path,
        device: str | torch.device | None = None,
        which: str = "best",
        precision: Precision = "fp32",
        packed: bool = True,
    ) -> Translator | NATTranslator:
        """Load a run folder (its best checkpoint) or one checkpoint folder;
        a non-autoregressive model's gives a ``NATTranslator``.

        ``precision="bf16"`` decodes with bfloat16 matrix products, ``"int8"``
        with int8 linear layers on the CPU (``rosetta.precision``); the
        default is float32.
        """
        folder = ckpt.resolve_checkpoint(Path(path), which)
        meta = ckpt.read_meta(folder)
        config = config_from_dict(meta["config"], str(folder / ckpt.META_FILE))
        if config.task == "lm":
            raise RosettaError(
                f"{folder}: a language model, not a translation model; use "
                "rosetta perplexity or rosetta generate (rosetta.LanguageModel)"
            )
        tokenizers = TokenizerPair.from_dict(meta["tokenizers"])
        model = build_model(config.model, len(tokenizers.src), len(tokenizers.tgt))
        device = parse_device(device)
        check_precision(device, precision)  # before a GPU is looked for
        device = pick_device(device)
        ckpt.load_weights(folder, model, device)
        if isinstance(model, NonAutoregressiveTransformer):
            return NATTranslator(model, tokenizers, config, device, precision)
        return cls(model, tokenizers, config, device, precision, packed)

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
            results[i] = [
                self._translation(h, source_pieces, options) for h in hypotheses
            ]
        return results
