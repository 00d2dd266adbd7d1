"""Validation during training: loss and perplexity, and BLEU or
exact-sequence accuracy of greedy output."""

from __future__ import annotations

import math
import sys

import torch
from tqdm import tqdm

from rosetta.data.batching import make_batches
from rosetta.data.encoded_pairs import EncodedPairs
from rosetta.data.synthetic import accuracy
from rosetta.data.vocab import PAD_ID
from rosetta.evaluate.corpus import sacrebleu_score
from rosetta.inference.text_translator import TextTranslator, Translation
from rosetta.interfaces.encoder_decoder import EncoderDecoder
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
        batch = examples.collate(indices).to(device)
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


def decoded_scores(
    translator: TextTranslator,
    pairs: list[tuple[str, str]],
    bleu: bool = True,
    exact: bool = False,
) -> tuple[dict[str, float], list[str]]:
    """Scores of ``translator``'s translations (its default search: greedy)
    of the validation sources, and the translations: sacreBLEU (``bleu``),
    and the share of outputs equal to their reference token for token
    (``exact``, in %), as the synthetic tasks are scored. Decodes only if a
    score is asked for."""
    if not (bleu or exact):
        return {}, []
    found = translate_shown(translator, [source for source, _ in pairs])
    hypotheses = [best[0].text if best else "" for best in found]
    references = [target for _, target in pairs]
    scores = {}
    if bleu:
        scores["bleu"] = sacrebleu_score(hypotheses, references).value
    if exact:
        scores["exact"] = 100.0 * accuracy(hypotheses, references).exact
    return scores, hypotheses


BATCHES_PER_STEP = 8  # of the progress bar


def translate_shown(
    translator: TextTranslator, sentences: list[str]
) -> list[list[Translation]]:
    """``translator.translate_nbest(sentences)``, with a progress bar.

    The sentences go to the translator a few batches at a time, shortest
    first, cut where the translator would cut its batches anyway, so every
    batch, and every translation, is what one call for all of them makes.
    """
    sources = [translator.encode(sentence) for sentence in sentences]
    order = sorted(
        (i for i, ids in enumerate(sources) if ids), key=lambda i: len(sources[i])
    )
    step = translator.config.decode.batch_size * BATCHES_PER_STEP
    results: list[list[Translation]] = [[] for _ in sentences]  # blank: none
    # beneath the training bar: on a terminal only, as moving the cursor up
    # to redraw it would leave escape codes in a redirected log
    nested = {"leave": False, "disable": not sys.stderr.isatty()}
    with tqdm(total=len(order), desc="validating", unit="sentence", **nested) as bar:
        for start in range(0, len(order), step):
            part = order[start : start + step]
            found = translator.translate_ids([sources[i] for i in part])
            for i, translations in zip(part, found, strict=True):
                results[i] = translations
            bar.update(len(part))
    return results
