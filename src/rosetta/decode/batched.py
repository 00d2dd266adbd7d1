"""Decode many sentences: sort by length, batch, search, restore input order."""

from __future__ import annotations

import torch

from rosetta.data.batching import Example, collate
from rosetta.data.vocab import BOS_ID, EOS_ID
from rosetta.decode.greedy import Hypothesis
from rosetta.decode.options import SearchOptions, search
from rosetta.models.interface import EncoderDecoder


def decode_in_batches(
    model: EncoderDecoder,
    sources: list[list[int]],
    device: torch.device,
    *,
    batch_size: int,
    options: SearchOptions,
    max_len_cap: int | None = None,
) -> list[list[Hypothesis]]:
    """Decode token-id sources (without ``<eos>``); an n-best list for each.

    Sentences of similar length are batched together so little work is spent
    on padding; the results come back in the order of ``sources``. Sampling
    draws from one generator seeded by ``options.seed``, so a seeded run is
    reproducible for a given batch size.
    """
    model.eval()
    generator = None
    if options.sample:
        generator = torch.Generator(device=device)
        if options.seed is not None:
            generator.manual_seed(options.seed)
        else:
            generator.seed()
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    results: list[list[Hypothesis]] = [[] for _ in sources]
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        batch = collate([Example(sources[i], []) for i in chunk]).to(device)
        found = search(
            model,
            batch.src,
            batch.src_mask,
            options,
            bos_id=BOS_ID,
            eos_id=EOS_ID,
            max_len_cap=max_len_cap,
            generator=generator,
        )
        for i, hypotheses in zip(chunk, found, strict=True):
            results[i] = hypotheses
    return results
