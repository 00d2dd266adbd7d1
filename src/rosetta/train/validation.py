"""Validation during training: loss and perplexity, and BLEU of greedy output."""

from __future__ import annotations

import math

import torch

from rosetta.data.batching import collate, make_batches
from rosetta.data.encoded_pairs import EncodedPairs
from rosetta.data.vocab import PAD_ID
from rosetta.evaluate.corpus import sacrebleu_score
from rosetta.inference.text_translator import TextTranslator
from rosetta.models.interface import EncoderDecoder
from rosetta.train.loss import label_smoothed_cross_entropy


@torch.no_grad()
def validation_loss(
    model: EncoderDecoder,
    examples: EncodedPairs,
    batch_tokens: int,
    label_smoothing: float,
    device: torch.device,
) -> dict[str, float]:
    """Per-token label-smoothed loss and perplexity (from the plain NLL)."""
    model.eval()
    loss_sum = nll_sum = 0.0
    count = 0
    lengths = examples.src_lengths, examples.tgt_lengths
    for indices in make_batches(*lengths, batch_tokens):
        batch = collate([examples[i] for i in indices]).to(device)
        features = model(
            batch.src, batch.src_mask, batch.tgt_in, batch.tgt_in != PAD_ID
        )
        logits = model.output_proj(features)
        loss, nll, tokens = label_smoothed_cross_entropy(
            logits, batch.tgt_out, label_smoothing, PAD_ID
        )
        loss_sum += float(loss)
        nll_sum += float(nll)
        count += tokens
    return {"loss": loss_sum / count, "ppl": math.exp(min(nll_sum / count, 50.0))}


def validation_bleu(translator: TextTranslator, pairs: list[tuple[str, str]]) -> float:
    """sacreBLEU of ``translator``'s translations (its default search: greedy)
    of the validation sources."""
    hypotheses = translator.translate([source for source, _ in pairs])
    return sacrebleu_score(hypotheses, [target for _, target in pairs]).value
