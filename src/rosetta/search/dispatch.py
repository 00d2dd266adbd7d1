"""Decoding a batch with ``SearchOptions``: the dedicated greedy path for
beam size 1 (same result as ``beam_search`` with ``beam_size=1``, less
work), beam search otherwise, or sampling."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from rosetta.config.sections import DecodeConfig
from rosetta.interfaces.encoder_decoder import EncoderDecoder
from rosetta.search.beam import beam_search
from rosetta.search.constraints import BatchConstraints, TokenConstraints
from rosetta.search.greedy import Hypothesis, greedy_search, most_likely
from rosetta.search.options import SearchOptions
from rosetta.search.sampling import sampler


def search(
    model: EncoderDecoder,
    src: torch.Tensor,
    src_mask: torch.Tensor,
    options: SearchOptions,
    *,
    bos_id: int,
    eos_id: int,
    max_len_cap: int | None = None,
    generator: torch.Generator | None = None,
    constraints: Sequence[TokenConstraints] | None = None,
) -> list[list[Hypothesis]]:
    """Decode a batch with ``options``; per sentence its n-best list, under
    its ``constraints`` if given. An unset length limit is that of a model
    configured with the defaults."""
    options = options.with_length_limit(DecodeConfig())
    batch = None
    if constraints is not None and any(constraints):
        batch = BatchConstraints(constraints, eos_id, src.device)
    limits = dict(
        max_len_a=options.max_len_a,
        max_len_b=options.max_len_b,
        max_len_cap=max_len_cap,
        constraints=batch,
    )
    if options.uses_beam:
        return beam_search(
            model,
            src,
            src_mask,
            bos_id=bos_id,
            eos_id=eos_id,
            beam_size=options.beam_size,
            alpha=options.alpha,
            penalty=options.penalty,
            stopping=options.stopping,
            refill=options.refill,
            nbest=options.nbest,
            need_attention=options.need_attention,
            controls=options.controls(eos_id),
            **limits,
        )
    choose = most_likely
    if options.sample:
        choose = sampler(options.temperature, options.top_k, options.top_p, generator)
    hypotheses = greedy_search(
        model,
        src,
        src_mask,
        bos_id=bos_id,
        eos_id=eos_id,
        choose=choose,
        controls=options.controls(eos_id),
        **limits,
    )
    return [[h] for h in hypotheses]
