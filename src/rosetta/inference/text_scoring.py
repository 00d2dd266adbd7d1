"""How well a language model predicts a text: the mean negative
log-likelihood per token, its perplexity, and bits per character.

    loss = −(1/T) Σ_t log p(x_t | x_<t)      nats per token
    ppl  = exp(loss)
    bpc  = loss / ln 2                        bits, when tokens are characters

The text is read in consecutive segments, each attending to the memory the
earlier ones left (``rosetta.interfaces.language_model``), so every token
is predicted from its segment so far plus up to ``memory_length`` earlier
positions per layer.
Several stretches of the text can be read side by side, each warmed up on
the text before it, with the same result (``score_text``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F
from tqdm import tqdm

from rosetta.data.vocab import PAD_ID
from rosetta.interfaces.language_model import SegmentLanguageModel

UNSCORED = -100  # the label of a position read but not scored


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


def warm_up_segments(layers: int, memory_length: int, segment_length: int) -> int:
    """How many segments a row must read, unscored, before a stretch of the
    text so that its memory is what reading in order would have left there.

    A layer's memory spans ``ceil(M / L)`` segments back, and the first
    ones a row reads lack what lies before them. Their damage moves up one
    layer per ``ceil(M / L)`` segments, so it has left the last of the
    model's layers after ``layers · ceil(M / L)`` segments."""
    return layers * -(-memory_length // segment_length)


@torch.no_grad()
def score_text(
    model: SegmentLanguageModel,
    ids: list[int] | np.ndarray,
    segment_length: int,
    memory_length: int,
    device: torch.device,
    streams: int = 1,
    progress: bool = False,
) -> TextScore:
    """Score every token of ``ids`` after the first, each predicted from its
    segment so far and the memory, as when the text is read in order.

    ``streams`` > 1 reads that many stretches of the text side by side, a
    batch row each, which is faster. Each row first reads, unscored, the
    ``warm_up_segments`` before its stretch, so every token is predicted as
    reading in order predicts it (the same to float rounding).

    Args:
        memory_length: positions per layer kept between segments (0: each
            segment alone).
    """
    model.eval()
    length = segment_length
    inputs, labels = np.asarray(ids[:-1]), np.asarray(ids[1:])
    count = -(-len(inputs) // length)  # segments, the last maybe shorter
    rows = max(1, min(streams, count))
    warm = warm_up_segments(len(model.layers), memory_length, length)
    starts = [count * row // rows for row in range(rows)]  # first scored segments
    ends = [*starts[1:], count]
    firsts = [max(0, start - warm) for start in starts]
    width = max(end - first for first, end in zip(firsts, ends, strict=True)) * length
    grid = np.full((rows, width), PAD_ID, dtype=np.int64)
    targets = np.full((rows, width), UNSCORED, dtype=np.int64)
    for row, (first, start, end) in enumerate(zip(firsts, starts, ends, strict=True)):
        begin, stop = first * length, min(end * length, len(inputs))
        grid[row, : stop - begin] = inputs[begin:stop]
        scored = start * length - begin  # padding after the text stays unscored
        targets[row, scored : stop - begin] = labels[start * length : stop]
    memory = None
    nll_sum, tokens = 0.0, 0
    segments = tqdm(
        range(width // length),
        desc="scoring",
        disable=not progress,
        unit="segment",
        leave=False,
    )
    for index in segments:
        columns = slice(index * length, (index + 1) * length)
        x = torch.from_numpy(grid[:, columns]).to(device)
        y = torch.from_numpy(targets[:, columns]).to(device)
        features, memory = model(x, memory, memory_length)
        logits = model.output_proj(features).float()  # (n, L, V)
        nll_sum += float(
            F.cross_entropy(
                logits.flatten(0, 1),
                y.flatten(),
                ignore_index=UNSCORED,
                reduction="sum",
            )
        )
        tokens += int((y != UNSCORED).sum())
    return TextScore(nll_sum, tokens)
