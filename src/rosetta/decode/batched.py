"""Decode many sentences: sort by length, batch, search, restore input order."""

from __future__ import annotations

import torch

from rosetta.data.batching import Example, collate
from rosetta.data.vocab import BOS_ID, EOS_ID
from rosetta.decode.greedy import Hypothesis, greedy_search
from rosetta.models.interface import EncoderDecoder


def decode_in_batches(
    model: EncoderDecoder,
    sources: list[list[int]],
    device: torch.device,
    *,
    batch_size: int,
    max_len_a: float,
    max_len_b: int,
    max_len_cap: int | None = None,
) -> list[Hypothesis]:
    """Greedy-decode token-id sources (without ``<eos>``); one hypothesis each.

    Sentences of similar length are batched together so little work is spent
    on padding; the results come back in the order of ``sources``.
    """
    model.eval()
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    results: list[Hypothesis | None] = [None] * len(sources)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        batch = collate([Example(sources[i], []) for i in chunk]).to(device)
        hypotheses = greedy_search(
            model,
            batch.src,
            batch.src_mask,
            bos_id=BOS_ID,
            eos_id=EOS_ID,
            max_len_a=max_len_a,
            max_len_b=max_len_b,
            max_len_cap=max_len_cap,
        )
        for i, hypothesis in zip(chunk, hypotheses, strict=True):
            results[i] = hypothesis
    return [h for h in results if h is not None]
