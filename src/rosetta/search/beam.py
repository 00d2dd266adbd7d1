"""Batched beam search through ``encode`` / ``init_state`` / ``step``.

Every sentence keeps ``k`` live prefixes; all sentences and beams sit in one
(n*k)-row decoding state, so a step is one ``model.step`` call and a handful of
tensor operations, with no Python loop over sentences or beams.

At each step every live prefix is expanded by every token (k·V candidates per
sentence, scored by the sum of log-probabilities) and exactly the ``k`` best
expansions are kept (they are found among each prefix's ``k`` best tokens):
those that end (``<eos>``, or the sentence's maximum length ``a·S + b``) are
set aside as finished candidates, the others are the next step's live
prefixes. With ``k = 1`` this is greedy search. The first step decodes one
row per sentence, since a sentence's k beams would all hold ``<bos>``, and
the state is widened to k rows after it.

The final choice among all finished candidates is by the length-normalised
score ``(1 / L^α) Σ_{t=1..L} log P(y_t | y_<t, c)`` (α = 0.75 by default), where
``L`` counts the scored tokens (``<eos>`` included when produced), or by the
GNMT penalty ``Σ log P / ((5 + L) / 6)^α``.

A sentence stops when

- ``stopping="exact"`` (default): no live prefix can still enter its n-best
  list. Log-probabilities are ≤ 0, so a live prefix with sum ``s`` can at best
  reach ``s / penalty(max length)``; when that is not above the n-th best
  finished score, decoding further cannot change the result;
- ``stopping="k_finished"``: ``k`` candidates have finished;
- ``stopping="max_length"``: only when no prefix is live any more;
- and always at its maximum length.

A live prefix to which the controls leave no token ends where it stands, an
incomplete candidate (``rosetta.search.controls``): a sentence's incomplete
candidates are its result only when none of its candidates is complete.

Constraints per sentence (a prefix, phrases to include or exclude) steer the
same loop (``rosetta.search.constraints``): with phrases to include, the
candidates also hold the next token of each phrase a prefix has not met,
and the beam's places are allocated among them by how much they have met.
"""

from __future__ import annotations

import torch

from rosetta.interfaces.encoder_decoder import DecoderState, EncoderDecoder
from rosetta.search.constraints import BatchConstraints, allocate
from rosetta.search.controls import NO_CONTROLS, Controls, next_token_log_probs
from rosetta.search.fed_prefix import feed_prefix
from rosetta.search.finished import FinishedCandidates, expand_like
from rosetta.search.greedy import Hypothesis, max_lengths
from rosetta.search.options import LengthPenalty, Stopping, check_penalty
from rosetta.search.topk import top_k_rows


def length_penalty(
    length: torch.Tensor, alpha: float, kind: LengthPenalty = "power"
) -> torch.Tensor:
    """The divisor of the summed log-probability: ``L^α`` or ``((5 + L) / 6)^α``."""
    check_penalty(kind)
    length = length.double()
    if kind == "power":
        return length**alpha
    return ((5 + length) / 6) ** alpha


def normalized_score(
    score: float, length: int, alpha: float, kind: LengthPenalty = "power"
) -> float:
    """The ranking score of one finished sequence of ``length`` scored tokens."""
    return score / float(length_penalty(torch.tensor(length), alpha, kind))


@torch.no_grad()
def beam_search(
    model: EncoderDecoder,
    src: torch.Tensor,
    src_mask: torch.Tensor,
    *,
    bos_id: int,
    eos_id: int,
    beam_size: int,
    alpha: float,
    penalty: LengthPenalty = "power",
    stopping: Stopping = "exact",
    nbest: int = 1,
    max_len_a: float,
    max_len_b: int,
    max_len_cap: int | None = None,
    need_attention: bool = False,
    refill: bool = False,
    controls: Controls = NO_CONTROLS,
    constraints: BatchConstraints | None = None,
) -> list[list[Hypothesis]]:
    """Decode a batch ``src`` (n, S) with mask (n, S), True at real tokens,
    each sentence under its ``constraints`` (if any).

    ``refill=False`` is the textbook beam: the k best expansions, ended or not,
    fill the beam, so it narrows as candidates end. ``refill=True`` keeps k live
    prefixes: the ended ones among the k best are finished, and the best
    expansions that do not end take the k places (the beam of fairseq,
    Hugging Face and CTranslate2).

    Returns, per sentence, its ``nbest`` finished hypotheses, best first, each
    with its summed log-probability (``score``) and the score it was ranked by
    (``normalized_score``); with ``need_attention``, the attention weights of
    every output step (``attention``, (L, layers, heads, S)).
    """
    if beam_size < 1:
        raise ValueError(f"beam size must be at least 1, got {beam_size}")
    if not 1 <= nbest <= beam_size:
        raise ValueError(f"nbest must be between 1 and the beam size, got {nbest}")
    if stopping not in ("exact", "k_finished", "max_length"):
        raise ValueError(
            f"unknown stopping {stopping!r}: use 'exact', 'k_finished' or 'max_length'"
        )
    length_penalty(torch.tensor(1), alpha, penalty)  # validates the penalty kind
    n, k, device = src.size(0), beam_size, src.device
    least = None if constraints is None else constraints.least_lengths()
    limits = max_lengths(src_mask.sum(1), max_len_a, max_len_b, max_len_cap, least)
    controls.check_limits(limits)
    steps = int(limits.max())
    best_possible_divisor = length_penalty(limits, alpha, penalty)  # (n,)
    # penalty(L) for L = 1..steps, computed once: step t scores L = t + 1 tokens
    divisors = length_penalty(torch.arange(1, steps + 1), alpha, penalty).tolist()
    # The first step decodes one row per sentence: its k beams would all hold
    # the same prefix, <bos>; the state is widened to k rows after it.
    state = model.init_state(model.encode(src, src_mask), src_mask)
    rows_per_sentence = 1
    # refill: rank 2k expansions, so k that do not end remain (a prefix has
    # one <eos> expansion, so at most k of them end)
    width = 2 * k if refill else k
    position = torch.arange(width, device=device)  # rank among the expansions
    among_k_best = position < k
    neg_inf = float("-inf")

    # live beams of the active sentences (a = number of active sentences)
    active = torch.arange(n, device=device)  # original index of each
    live_scores = torch.full((n, k), neg_inf, dtype=torch.float64, device=device)
    live_scores[:, 0] = 0.0  # one live prefix, <bos>, at the start
    live_tokens = torch.zeros((n, k, 0), dtype=torch.long, device=device)
    prev = torch.full((n,), bos_id, dtype=torch.long, device=device)
    live_attention: torch.Tensor | None = None  # (a, k, t, layers, heads, S)
    done = FinishedCandidates.empty(n, k, steps, eos_id, device)
    stuck = FinishedCandidates.empty(n, k, steps, eos_id, device)  # incomplete
    includes = constraints is not None and constraints.includes
    live_matched = None  # (a, k, P): include tokens each live prefix has met
    if includes:
        live_matched = constraints.start(active).unsqueeze(1).expand(-1, k, -1)
    fed = None
    if not need_attention:  # the prefix every sentence starts with, in one pass
        fed = feed_prefix(model, state, constraints, controls, limits, bos_id)
    if fed is not None:
        state, live_scores[:, 0] = fed.state, fed.scores
        live_tokens = fed.tokens.unsqueeze(1).expand(-1, k, -1).contiguous()
        for column in range(fed.length if live_matched is not None else 0):
            live_matched = constraints.advance(
                live_matched,
                live_tokens[..., column],
                active.unsqueeze(1).expand(-1, k),
            )

    for t in range(0 if fed is None else fed.length, steps):
        a = active.numel()
        # the tokens so far of each state row: (a * rows_per_sentence, t)
        prefixes = live_tokens[:, :rows_per_sentence].reshape(a * rows_per_sentence, t)
        if fed is not None and t == fed.length:
            log_probs = fed.after
            controls.rule_out(log_probs, prefixes)
        else:
            log_probs, state = next_token_log_probs(  # (a*k, V)
                model, prev, state, prefixes, controls, need_attention
            )
        row_matched = None
        if live_matched is not None:
            row_matched = live_matched[:, :rows_per_sentence].flatten(0, 1)
        if constraints is not None:  # nothing added to a search without them
            row_sentence = active.repeat_interleave(rows_per_sentence)
            constraints.rule_out(log_probs, prefixes, row_sentence, row_matched)
        no_token = ~log_probs.isfinite().any(dim=1)  # (a * rows_per_sentence,)
        if bool(no_token.any()):  # those prefixes end here, incomplete
            ended_here = torch.zeros_like(live_scores, dtype=torch.bool)
            ended_here[:, :rows_per_sentence] = no_token.view(a, rows_per_sentence)
            ended_here &= live_scores.isfinite()
            rank = live_scores / divisors[max(t, 1) - 1]
            stuck.merge(
                active,
                rank.masked_fill(~ended_here, neg_inf),
                live_scores,
                live_tokens,
                torch.full_like(live_scores, t, dtype=torch.long),
                live_attention,
            )
        # Adding a prefix's score keeps the order of its row, so a sentence's
        # best expansions are among the best tokens of each of its rows: rank
        # k·width candidates per sentence, not k·V.
        per_row = min(width, log_probs.size(-1))
        row_scores, row_tokens = top_k_rows(log_probs, per_row)  # (rows, per_row)
        if includes:  # and the next token of each phrase not met
            wanted = constraints.next_tokens(row_matched, row_sentence)  # (rows, P)
            wanted_scores = log_probs.gather(1, wanted.clamp(min=0)).to(row_scores)
            repeated = (wanted[:, :, None] == row_tokens[:, None, :]).any(2)
            repeated |= (wanted[:, :, None] == wanted[:, None, :]).tril(-1).any(2)
            unwanted = (wanted < 0) | repeated
            row_scores = torch.cat(
                [row_scores, wanted_scores.masked_fill(unwanted, neg_inf)], 1
            )
            row_tokens = torch.cat([row_tokens, wanted.clamp(min=0)], 1)
        per_row = row_tokens.size(1)
        if rows_per_sentence < k:  # the first step: slot 0 is the only live one
            row_scores = row_scores.repeat_interleave(k, dim=0)
            row_tokens = row_tokens.repeat_interleave(k, dim=0)
        candidates = live_scores.unsqueeze(-1) + row_scores.double().view(a, k, -1)
        matched = None
        if includes:  # every candidate's count, and the beam allocated by it
            expanded = live_matched.unsqueeze(2).expand(-1, -1, per_row, -1)
            matched = constraints.advance(
                expanded,
                row_tokens.view(a, k, per_row),
                active[:, None, None].expand(-1, k, per_row),
            )
            matched = matched.reshape(a, k * per_row, -1)
            sentence = active.unsqueeze(1)
            banks = constraints.met(matched, sentence)
            top_index = allocate(
                candidates.view(a, -1), banks, constraints.needed[active], width
            )
            top_scores = candidates.view(a, -1).gather(1, top_index)
            matched = matched.gather(1, expand_like(top_index, matched))
        else:
            top_scores, top_index = candidates.view(a, -1).topk(width, dim=1)
        parent = top_index // per_row
        token = row_tokens.view(a, -1).gather(1, top_index)
        at_limit = (t + 1 >= limits[active]).unsqueeze(1)  # (a, 1)
        ends = (token == eos_id) | at_limit
        sequences = torch.cat(
            [
                live_tokens.gather(1, parent.unsqueeze(-1).expand(-1, -1, t)),
                token.unsqueeze(-1),
            ],
            dim=-1,
        )  # (a, w, t+1)
        step_attention = None
        if need_attention:
            step_attention = _beam_attention(
                state, live_attention, parent, a, rows_per_sentence
            )

        # expansions among the k best that end are finished candidates (those
        # that end at the limit with an include phrase unmet, incomplete ones)
        finishing = ends & top_scores.isfinite() & among_k_best
        rank = (top_scores / divisors[t]).masked_fill(~finishing, neg_inf)
        lengths = t + 1 - (token == eos_id).long()  # tokens before <eos>
        if matched is not None:
            short = ~constraints.all_met(matched, active.unsqueeze(1))
            attention = step_attention
            stuck.merge(
                active,
                rank.masked_fill(~short, neg_inf),
                top_scores,
                sequences,
                lengths,
                attention,
            )
            rank = rank.masked_fill(short, neg_inf)
        done.merge(active, rank, top_scores, sequences, lengths, step_attention)

        if refill:  # the k best expansions that do not end live on
            live = torch.where(ends, position + width, position).argsort(dim=1)[:, :k]
            top_scores, ends = top_scores.gather(1, live), ends.gather(1, live)
            parent, token = parent.gather(1, live), token.gather(1, live)
            sequences = sequences.gather(1, expand_like(live, sequences))
            if matched is not None:
                matched = matched.gather(1, expand_like(live, matched))
            if step_attention is not None:
                step_attention = step_attention.gather(
                    1, expand_like(live, step_attention)
                )
        live_scores = top_scores.masked_fill(ends, neg_inf)
        live_tokens, prev_rows, live_attention = sequences, token, step_attention
        live_matched = matched
        # the state row each new live prefix continues (at the first step, the
        # -inf candidates of the dead slots point to the sentence's one row)
        beam_rows = torch.arange(a, device=device).unsqueeze(1) * rows_per_sentence
        beam_rows = beam_rows + parent.clamp(max=rows_per_sentence - 1)

        kth_done = done.rank[active, nbest - 1]  # the n-best list's last entry
        if stopping == "exact":
            reachable = live_scores.max(dim=1).values / best_possible_divisor[active]
            finished = kth_done >= reachable
        elif stopping == "k_finished":  # k kept means at least k have finished
            finished = done.rank[active].isfinite().all(dim=1)
        else:
            finished = torch.zeros_like(kth_done, dtype=torch.bool)
        finished |= at_limit.squeeze(1) | ~live_scores.isfinite().any(dim=1)
        if bool(finished.all()):
            break
        keep = (~finished).nonzero().squeeze(1)
        state = state.reorder(beam_rows[keep].flatten())
        rows_per_sentence = k
        active, live_scores = active[keep], live_scores[keep]
        live_tokens, prev = live_tokens[keep], prev_rows[keep].flatten()
        if live_attention is not None:
            live_attention = live_attention[keep]
        if live_matched is not None:
            live_matched = live_matched[keep]

    src_lengths = src_mask.sum(1).tolist()
    found = done.hypotheses(nbest, src_lengths)
    incomplete = stuck.hypotheses(nbest, src_lengths, complete=False)
    return [best or fallback for best, fallback in zip(found, incomplete, strict=True)]


def _beam_attention(
    state: DecoderState,
    live_attention: torch.Tensor | None,
    parent: torch.Tensor,
    a: int,
    rows_per_sentence: int,
) -> torch.Tensor:
    """Every candidate's attention history: (a, w, t+1, layers, heads, S)."""
    if state.attention is None:
        raise ValueError("this model does not report attention weights")
    weights = state.attention[:, -1]  # (a*rows_per_sentence, layers, heads, S)
    weights = weights.reshape(a, rows_per_sentence, 1, *weights.shape[1:])
    history = (
        weights
        if live_attention is None
        else torch.cat([live_attention, weights], dim=2)
    )
    parent = parent.clamp(max=rows_per_sentence - 1)  # first step: one row
    return history.gather(1, expand_like(parent, history))
