"""How well a language model predicts a text: the mean negative
log-likelihood per token, its perplexity, and bits per character.

    loss = −(1/T) Σ_t log p(x_t | x_<t)      nats per token
    ppl  = exp(loss)
    bpc  = loss / ln 2                        bits, when tokens are characters

The text is read in consecutive segments, each attending to the memory the
earlier ones left (``MemoryTransformerLM``), so every token is predicted from
its segment so far plus up to ``memory_length`` earlier positions per layer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.nn import functional as F
from tqdm import tqdm

from rosetta.data.text import TokenStreams
from rosetta.families.language_model.model import MemoryTransformerLM


@dataclass(frozen=True)
class TextScore:
    nll_sum: float  # nats, summed over the scored tokens
    tokens: int

    @property
    def loss(self) -> float:
        return self.nll_sum / self.tokens

    @property
    def perplexity(self) -> float:
        return math.exp(min(self.loss, 50.0))

    @property
    def bits_per_token(self) -> float:
        return self.loss / math.log(2)


@torch.no_grad()
def score_text(
    model: MemoryTransformerLM,
    ids: list[int],
    segment_length: int,
    memory_length: int,
    device: torch.device,
    streams: int = 1,
    progress: bool = False,
) -> TextScore:
    """Score every token of ``ids`` after the first, in ``streams`` parallel
    rows (1: the text in order, each token with all the context the memory
    holds; more: faster, but each row starts without context).

    Args:
        memory_length: positions per layer kept between segments (0: each
            segment alone).
    """
    model.eval()
    layout = TokenStreams.of(ids, streams)
    memory = None
    nll_sum, tokens = 0.0, 0
    count = layout.segments(segment_length)
    for index in tqdm(range(count), disable=not progress, unit="segment"):
        inputs, labels = (t.to(device) for t in layout.segment(index, segment_length))
        features, memory = model(inputs, memory, memory_length)
        logits = model.output_proj(features).float()  # (n, L, V)
        nll_sum += float(
            F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="sum")
        )
        tokens += labels.numel()
    return TextScore(nll_sum, tokens)
