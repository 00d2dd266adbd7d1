"""Translating with an autoregressive model (a Transformer or a recurrent
encoder-decoder): search one token at a time (``rosetta.search``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from rosetta.data.vocab import EOS
from rosetta.inference.text_translator import (
    DecodeRequest,
    Found,
    TextTranslator,
    Translation,
)
from rosetta.interfaces.encoder_decoder import EncoderDecoder
from rosetta.interfaces.trained import Trained
from rosetta.runtime.precision import (
    AUTOCAST_DTYPES,
    autocast,
    check_precision,
    quantize_int8,
)
from rosetta.runtime.precisions import Precision
from rosetta.search.batched import decode_in_batches

if TYPE_CHECKING:
    pass

# A family's fast path: a frozen copy of the model that decodes the same,
# faster (the Transformer's ``pack_for_inference``), for a compute dtype.
Pack = Callable[[EncoderDecoder, torch.dtype | None], EncoderDecoder]


class Translator(TextTranslator):
    """A trained model with its tokenizers, ready to translate text.

    For example:

        translator = rosetta.load("runs/multi30k-de-en-transformer")
        translator.translate(["Ein Hund läuft im Schnee."])

    The translator decodes with a model made ready for inference when it is
    built: int8-quantized, or through the family's fast path ``pack`` (the
    Transformer's packed one-token steps). Both are copies: changing the
    given model's weights afterwards does not change what this translator
    produces; build a new one to translate with them.
    """

    engine = "rosetta"

    def __init__(
        self,
        trained: Trained,
        precision: Precision = "fp32",
        pack: Pack | None = None,
        in_workers: bool = True,
    ):
        """``pack``: the family's fast path, if any (``Pack``);
        ``in_workers=False``: it runs one batch at a time (a compiled step)."""
        device = trained.device
        check_precision(device, precision)
        model = trained.model.to(device).eval()
        if precision == "int8":
            model = quantize_int8(model)
        elif pack is not None:
            model = pack(model, AUTOCAST_DTYPES.get(precision))
        self.model = model
        self.decodes_in_workers = in_workers
        self.tokenizers, self.config = trained.tokenizers, trained.config
        self.device, self.precision = device, precision

    @property
    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    @torch.no_grad()
    def decode_ids(self, request: DecodeRequest) -> Found:
        """Search, a batch at a time (``rosetta.search.batched``)."""
        sources, constraints = request.sources, request.constraints
        options = request.options
        nonempty = {i: ids for i, ids in enumerate(sources) if ids}
        kept = None if constraints is None else [constraints[i] for i in nonempty]
        with autocast(self.device, self.precision):
            found = decode_in_batches(
                self.model,
                list(nonempty.values()),
                self.device,
                batch_size=request.size,
                options=options,
                max_len_cap=self.position_limit,
                workers=request.workers if self.decodes_in_workers else 1,
                constraints=kept,
                progress=request.progress,
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
