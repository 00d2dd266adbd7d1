"""Batched greedy search through ``encode`` / ``init_state`` / ``step``.

``y_t = argmax_y P(y | y_<t, c)``, starting from ``<bos>`` and stopping at
``<eos>`` or at the maximum length ``a * S + b``. Sentences that finish leave
the batch (their rows are dropped from the state with ``reorder``), so no work
is spent on them. A sentence whose controls leave it no token at a step ends
there, marked incomplete (``rosetta.search.controls``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from rosetta.interfaces.encoder_decoder import EncoderDecoder
from rosetta.search.constraints import BatchConstraints
from rosetta.search.controls import NO_CONTROLS, Controls
from rosetta.search.fed_prefix import NextTokens, feed_prefix
from rosetta.search.topk import argmax_rows


@dataclass
class Hypothesis:
    """A decoded sequence (without ``<bos>``/``<eos>``) and its log-probability."""

    tokens: list[int]
    score: float  # sum of log P(y_t | y_<t, c), including <eos> when produced
    normalized_score: float | None = None  # what beam search ranked by
    attention: torch.Tensor | None = None  # (L, layers, heads, S) when asked for
    ended: bool = True  # <eos> was produced (else the length limit ended it)
    # False: the controls left no token to go on with, so it stops short
    complete: bool = True

    def scored_length(self) -> int:
        """``L`` of the length normalisation: the tokens, and ``<eos>`` if
        produced; at least 1, so an empty incomplete output divides by 1."""
        return max(len(self.tokens) + self.ended, 1)


def max_lengths(
    src_lengths: torch.Tensor,
    a: float,
    b: int,
    cap: int | None = None,
    least: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-sentence output limit ``floor(a * S + b)``, at least 1 (and
    ``least``, (n,), what constraints need), at most ``cap``."""
    limits = torch.floor(src_lengths.double() * a + b).long().clamp(min=1)
    if least is not None:
        limits = torch.maximum(limits, least.to(limits.device))
    return limits.clamp(max=cap) if cap is not None else limits


def output_limits(
    src_mask: torch.Tensor,
    max_len_a: float,
    max_len_b: int,
    max_len_cap: int | None,
    constraints: BatchConstraints | None,
    controls: Controls,
) -> torch.Tensor:
    """(n,) each sentence's output limit (``max_lengths``), raised to what its
    constraints need; ``ValueError`` where the controls' minimum length is
    beyond it."""
    least = None if constraints is None else constraints.least_lengths()
    limits = max_lengths(src_mask.sum(1), max_len_a, max_len_b, max_len_cap, least)
    controls.check_limits(limits)
    return limits


TokenChooser = Callable[[torch.Tensor], torch.Tensor]  # (n, V) log P -> (n,) ids


def most_likely(log_probs: torch.Tensor) -> torch.Tensor:
    """``y_t = argmax_y P(y | y_<t, c)``."""
    return argmax_rows(log_probs)


@torch.no_grad()
def greedy_search(
    model: EncoderDecoder,
    src: torch.Tensor,
    src_mask: torch.Tensor,
    *,
    bos_id: int,
    eos_id: int,
    max_len_a: float,
    max_len_b: int,
    max_len_cap: int | None = None,
    choose: TokenChooser = most_likely,
    controls: Controls = NO_CONTROLS,
    constraints: BatchConstraints | None = None,
) -> list[Hypothesis]:
    """Decode a batch ``src`` (n, S) with mask (n, S), True at real tokens,
    each sentence under its ``constraints`` (a prefix, phrases to exclude;
    phrases to include need beam search).

    ``choose`` picks each next token from the log-probabilities (the most
    likely one; sampling passes its own). Scores are the model's
    log-probabilities of the chosen tokens.
    """
    if constraints is not None and constraints.includes:
        raise ValueError("phrases to include need beam search (beam size 2 or more)")
    limits = output_limits(
        src_mask, max_len_a, max_len_b, max_len_cap, constraints, controls
    )
    n, device, steps = src.size(0), src.device, int(limits.max())
    state = model.init_state(model.encode(src, src_mask), src_mask)
    alive = torch.arange(n, device=device)  # original row of each state row
    tokens = torch.full((n,), bos_id, dtype=torch.long, device=device)
    output = torch.full((n, steps), eos_id, dtype=torch.long, device=device)
    lengths = limits.clone()
    scores = torch.zeros(n, dtype=torch.float64, device=device)
    stuck = torch.zeros(n, dtype=torch.bool, device=device)  # no token was left
    fed = feed_prefix(model, state, constraints, controls, limits, bos_id)
    if fed is not None:  # the prefix every sentence starts with, in one pass
        output[:, : fed.length], scores, state = fed.tokens, fed.scores, fed.state
    next_tokens = NextTokens(model, controls, fed)

    for t in range(0 if fed is None else fed.length, steps):
        log_probs, state = next_tokens(tokens, state, output[alive, :t])  # (alive, V)
        if constraints is not None:
            constraints.rule_out(log_probs, output[alive, :t], alive)
        # a row left no token ends as if by <eos>, adding 0 to its score
        no_token = ~log_probs.isfinite().any(dim=1)  # (alive,)
        log_probs[:, eos_id].masked_fill_(no_token, 0.0)
        stuck[alive] |= no_token
        tokens = choose(log_probs)
        scores[alive] += log_probs.gather(1, tokens.unsqueeze(1)).squeeze(1).double()
        output[alive, t] = tokens
        ended_eos = tokens == eos_id
        lengths[alive[ended_eos]] = t  # tokens before <eos>
        done = ended_eos | (t + 1 >= limits[alive])
        if bool(done.all()):
            break
        if bool(done.any()):
            keep = (~done).nonzero().squeeze(1)
            state = state.reorder(keep)
            alive, tokens = alive[keep], tokens[keep]
    return _hypotheses(output, lengths, scores, limits, stuck)


def _hypotheses(
    output: torch.Tensor,
    lengths: torch.Tensor,
    scores: torch.Tensor,
    limits: torch.Tensor,
    stuck: torch.Tensor,
) -> list[Hypothesis]:
    """Each sentence's output (n, steps) cut to its length (n,): ended where
    it is shorter than its limit and not ``stuck`` (n,) (no token left)."""
    rows, lengths_list, scores_list = output.tolist(), lengths.tolist(), scores.tolist()
    ended = ((lengths < limits) & ~stuck).tolist()
    complete = (~stuck).tolist()
    return [
        Hypothesis(
            rows[i][: lengths_list[i]],
            scores_list[i],
            ended=ended[i],
            complete=complete[i],
        )
        for i in range(len(rows))
    ]
