"""Exhaustive search: score every sequence in ``V^T'``.

Only feasible for a tiny vocabulary and length; it is the exactness reference
for beam search, under the same scoring (``rosetta.search.beam``): every
sequence that ends with ``<eos>`` or reaches the maximum length ``T' = a·S + b``
is a candidate, ranked by ``Σ log P / penalty(L)``.

Prefixes of probability zero are dropped as they appear: every extension of
one also has probability zero, so none of them can be the best sequence.
A prefix to which the controls leave no token is an incomplete candidate,
ranked as ``Σ log P / penalty(max(L, 1))``; they are the result only where
no candidate is complete (as in beam search).

With ``constraints`` (one per sentence), a candidate is complete only if it
meets them (``TokenConstraints.met_by``, checked on the whole sequence, not
during the search), and the output limit leaves room for them as beam
search's does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import torch

from rosetta.interfaces.encoder_decoder import EncoderDecoder
from rosetta.search.beam import normalized_score
from rosetta.search.constraints import TokenConstraints
from rosetta.search.controls import NO_CONTROLS, Controls, next_token_log_probs
from rosetta.search.greedy import Hypothesis, max_lengths
from rosetta.search.options import LengthPenalty


@torch.no_grad()
def exhaustive_search(
    model: EncoderDecoder,
    src: torch.Tensor,
    src_mask: torch.Tensor,
    *,
    bos_id: int,
    eos_id: int,
    alpha: float,
    penalty: LengthPenalty = "power",
    nbest: int = 1,
    max_len_a: float,
    max_len_b: int,
    max_len_cap: int | None = None,
    max_sequences: int = 1_000_000,
    controls: Controls = NO_CONTROLS,
    constraints: Sequence[TokenConstraints] | None = None,
) -> list[list[Hypothesis]]:
    """The ``nbest`` best sequences of every sentence of the batch, best first.

    Raises ``ValueError`` when ``V^T'`` exceeds ``max_sequences``.
    """
    least = None
    if constraints is not None:
        needs = [len(c.prefix) + c.needed + 1 for c in constraints]
        least = torch.tensor(needs, dtype=torch.long)
    limits = max_lengths(src_mask.sum(1), max_len_a, max_len_b, max_len_cap, least)
    controls.check_limits(limits)
    results = []
    for i in range(src.size(0)):  # one sentence at a time: this is the reference
        length = int(src_mask[i].sum())
        source, mask = src[i : i + 1, :length], src_mask[i : i + 1, :length]
        finished = every_sequence(
            model,
            source,
            mask,
            int(limits[i]),
            bos_id=bos_id,
            eos_id=eos_id,
            rank=lambda score, scored: normalized_score(score, scored, alpha, penalty),
            max_sequences=max_sequences,
            controls=controls,
        )
        if constraints is not None:
            finished = [
                h if constraints[i].met_by(h.tokens) else replace(h, complete=False)
                for h in finished
            ]
        complete = [h for h in finished if h.complete]
        chosen = complete or finished
        chosen.sort(key=lambda h: -(h.normalized_score or 0.0))
        results.append(chosen[:nbest])
    return results


def every_sequence(
    model: EncoderDecoder,
    source: torch.Tensor,
    mask: torch.Tensor,
    limit: int,
    *,
    bos_id: int,
    eos_id: int,
    rank: Callable[[float, int], float],
    max_sequences: int,
    controls: Controls,
) -> list[Hypothesis]:
    """Every sequence of one sentence ``source`` (1, S) up to ``limit``
    tokens, scored, ranked by ``rank(score, scored tokens)``: those that end
    (``<eos>`` or the limit), and those the controls leave no token."""
    state = model.init_state(model.encode(source, mask), mask)
    prefixes: list[list[int]] = [[]]
    scores = torch.zeros(1, dtype=torch.float64)
    prev = torch.full((1,), bos_id, dtype=torch.long, device=source.device)
    finished: list[Hypothesis] = []
    for t in range(limit):
        done = torch.tensor(prefixes, dtype=torch.long, device=source.device)
        log_probs, state = next_token_log_probs(  # (P, V)
            model, prev, state, done.view(len(prefixes), t), controls
        )
        vocab = log_probs.size(-1)
        if t == 0 and vocab**limit > max_sequences:
            raise ValueError(
                f"exhaustive search would score V^T' = {vocab}^{limit} "
                f"sequences, more than max_sequences={max_sequences}; "
                "use a smaller vocabulary or maximum length, or beam search"
            )
        candidates = scores.unsqueeze(1) + log_probs.double().cpu()  # (P, V)
        no_token = ~candidates.isfinite().any(dim=1)
        for row in no_token.nonzero().flatten().tolist():
            score = float(scores[row])
            finished.append(
                Hypothesis(
                    prefixes[row],
                    score,
                    rank(score, max(t, 1)),
                    ended=False,
                    complete=False,
                )
            )
        for row, prefix in enumerate(prefixes):
            for token in range(vocab):
                score = float(candidates[row, token])
                if score == float("-inf"):
                    continue
                ends = token == eos_id
                if ends or t + 1 == limit:  # L = t + 1 scored tokens
                    tokens = prefix if ends else [*prefix, token]
                    finished.append(Hypothesis(tokens, score, rank(score, t + 1)))
        if t + 1 == limit:
            break
        live = (candidates.isfinite()).nonzero()  # (P', 2): parent, token
        live = live[live[:, 1] != eos_id]
        if live.numel() == 0:
            break
        prefixes = [[*prefixes[p], tok] for p, tok in live.tolist()]
        scores = candidates[live[:, 0], live[:, 1]]
        state = state.reorder(live[:, 0].to(source.device))
        prev = live[:, 1].to(source.device)
    return finished
