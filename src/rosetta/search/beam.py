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
and the beam's places are allocated among them by how much they have met
(``rosetta.search.include_beam``).

The loop (``_search``) reads as the steps above: the next token's
log-probabilities, the prefixes left no token set aside, the best
expansions (``best_expansions``), the ended ones finished (``finish``), the
live beam for the next step (``rosetta.search.live_beam``) and the stopping
test (``has_stopped``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from rosetta.interfaces.encoder_decoder import EncoderDecoder
from rosetta.search.constraints import BatchConstraints
from rosetta.search.controls import NO_CONTROLS, Controls
from rosetta.search.fed_prefix import NextTokens, feed_prefix
from rosetta.search.finished import FinishedCandidates
from rosetta.search.greedy import Hypothesis, output_limits
from rosetta.search.include_beam import IncludeAllocation
from rosetta.search.live_beam import Expansions, LiveBeam, attention_history
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


@dataclass(frozen=True)
class BeamSettings:
    """What a beam search is asked for, checked once."""

    bos_id: int
    eos_id: int
    beam_size: int
    alpha: float
    penalty: LengthPenalty = "power"
    stopping: Stopping = "exact"
    nbest: int = 1
    refill: bool = False
    need_attention: bool = False

    def __post_init__(self) -> None:
        if self.beam_size < 1:
            raise ValueError(f"beam size must be at least 1, got {self.beam_size}")
        if not 1 <= self.nbest <= self.beam_size:
            raise ValueError(
                f"nbest must be between 1 and the beam size, got {self.nbest}"
            )
        if self.stopping not in ("exact", "k_finished", "max_length"):
            raise ValueError(
                f"unknown stopping {self.stopping!r}: "
                "use 'exact', 'k_finished' or 'max_length'"
            )
        length_penalty(torch.tensor(1), self.alpha, self.penalty)  # checks the kind

    @property
    def width(self) -> int:
        """How many expansions a step ranks per sentence: refill ranks 2k, so
        k that do not end remain (a prefix has one ``<eos>`` expansion, so at
        most k of them end)."""
        return 2 * self.beam_size if self.refill else self.beam_size


@dataclass(frozen=True)
class Lengths:
    """A batch's output limits (n,) and the length penalties beam search
    divides by."""

    limits: torch.Tensor
    divisors: list[float]  # penalty(L) for L = 1..steps, computed once
    best_possible: torch.Tensor  # (n,) penalty(limit): a live prefix's best

    @classmethod
    def of(cls, limits: torch.Tensor, settings: BeamSettings) -> Lengths:
        def penalty(length: torch.Tensor) -> torch.Tensor:
            return length_penalty(length, settings.alpha, settings.penalty)

        steps = torch.arange(1, int(limits.max()) + 1)
        return cls(limits, penalty(steps).tolist(), penalty(limits))

    @property
    def steps(self) -> int:
        """The most steps any sentence takes."""
        return len(self.divisors)

    def divisor(self, length: int) -> float:
        """penalty(L) of ``L`` = ``length`` scored tokens."""
        return self.divisors[length - 1]


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
    settings = BeamSettings(
        bos_id=bos_id,
        eos_id=eos_id,
        beam_size=beam_size,
        alpha=alpha,
        penalty=penalty,
        stopping=stopping,
        nbest=nbest,
        refill=refill,
        need_attention=need_attention,
    )
    limits = output_limits(
        src_mask, max_len_a, max_len_b, max_len_cap, constraints, controls
    )
    lengths = Lengths.of(limits, settings)
    return _search(model, src, src_mask, settings, lengths, controls, constraints)


def _search(
    model: EncoderDecoder,
    src: torch.Tensor,
    src_mask: torch.Tensor,
    settings: BeamSettings,
    lengths: Lengths,
    controls: Controls,
    constraints: BatchConstraints | None,
) -> list[list[Hypothesis]]:
    """The search itself: at each step the best expansions of the live
    prefixes, the ended ones set aside, until every sentence stops."""
    n, k, device = src.size(0), settings.beam_size, src.device
    includes = IncludeAllocation.of(constraints)
    state = model.init_state(model.encode(src, src_mask), src_mask)
    fed = None
    if not settings.need_attention:  # the prefix every sentence starts with
        fed = feed_prefix(
            model, state, constraints, controls, lengths.limits, settings.bos_id
        )
        state = state if fed is None else fed.state
    beam = LiveBeam.start(n, k, settings.bos_id, device, fed, includes)
    next_tokens = NextTokens(model, controls, fed, settings.need_attention)
    done = FinishedCandidates.empty(n, k, lengths.steps, settings.eos_id, device)
    stuck = FinishedCandidates.empty(n, k, lengths.steps, settings.eos_id, device)

    while beam.length < lengths.steps:  # step t = beam.length
        prefixes = beam.prefixes()  # (rows, t)
        log_probs, state = next_tokens(beam.last_tokens(), state, prefixes)
        if constraints is not None:  # nothing added to a search without them
            constraints.rule_out(
                log_probs, prefixes, beam.row_sentence(), beam.row_matched()
            )
        no_token = ~log_probs.isfinite().any(dim=1)  # the controls left none
        if bool(no_token.any()):  # those prefixes end here, incomplete
            divisor = lengths.divisor(max(beam.length, 1))
            stuck.merge(beam.active, *beam.ended_where(no_token, divisor))
        best = best_expansions(beam, log_probs, settings, lengths, includes)
        if settings.need_attention:
            best = replace(best, attention=attention_history(state, beam, best.parent))
        finish(best, beam.active, settings, lengths, done, stuck)
        if settings.refill:  # the k best expansions that do not end live on
            best = best.refilled(k)
        rows = beam.state_rows(best.parent)  # the state row each continues
        beam = best.live(beam)
        stopped = has_stopped(beam, settings, lengths, done)
        if bool(stopped.all()):
            break
        keep = (~stopped).nonzero().squeeze(1)
        state = state.reorder(rows[keep].flatten())
        beam = beam.keep(keep)

    src_lengths = src_mask.sum(1).tolist()
    found = done.hypotheses(settings.nbest, src_lengths)
    incomplete = stuck.hypotheses(settings.nbest, src_lengths, complete=False)
    return [best or fallback for best, fallback in zip(found, incomplete, strict=True)]


def best_expansions(
    beam: LiveBeam,
    log_probs: torch.Tensor,
    settings: BeamSettings,
    lengths: Lengths,
    includes: IncludeAllocation | None,
) -> Expansions:
    """The ``width`` best one-token expansions of each sentence's live
    prefixes, by ``score + log P(token)`` (with phrases to include, by bank)."""
    a, t = beam.active.numel(), beam.length
    k, width = settings.beam_size, settings.width
    # Adding a prefix's score keeps the order of its row, so a sentence's
    # best expansions are among the best tokens of each of its rows: rank
    # k·width candidates per sentence, not k·V.
    row_scores, row_tokens = top_k_rows(log_probs, min(width, log_probs.size(-1)))
    if includes is not None:  # and the next token of each phrase not met
        row_scores, row_tokens = includes.add_wanted(
            log_probs, row_scores, row_tokens, beam.row_matched(), beam.row_sentence()
        )
    per_row = row_tokens.size(1)
    if beam.rows < k:  # the first step: slot 0 is the only live one
        row_scores = row_scores.repeat_interleave(k, dim=0)
        row_tokens = row_tokens.repeat_interleave(k, dim=0)
    candidates = beam.scores.unsqueeze(-1) + row_scores.double().view(a, k, -1)
    matched = unmet = None
    if includes is None:
        scores, index = candidates.view(a, -1).topk(width, dim=1)
    else:  # the beam's places allocated among the banks
        scores, index, matched = includes.choose(
            candidates, row_tokens.view(a, k, per_row), beam.matched, beam.active, width
        )
        unmet = includes.unmet(matched, beam.active)
    parent = index // per_row
    token = row_tokens.view(a, -1).gather(1, index)
    at_limit = (t + 1 >= lengths.limits[beam.active]).unsqueeze(1)  # (a, 1)
    ends = (token == settings.eos_id) | at_limit
    history = beam.tokens.gather(1, parent.unsqueeze(-1).expand(-1, -1, t))
    sequences = torch.cat([history, token.unsqueeze(-1)], dim=-1)  # (a, w, t+1)
    return Expansions(scores, parent, token, ends, sequences, None, matched, unmet)


def finish(
    best: Expansions,
    active: torch.Tensor,
    settings: BeamSettings,
    lengths: Lengths,
    done: FinishedCandidates,
    stuck: FinishedCandidates,
) -> None:
    """Expansions among the k best that end are finished candidates (those
    that end with a phrase to include unmet, incomplete ones)."""
    scored = best.sequences.size(2)  # L = t + 1: the tokens and <eos>
    among_k_best = (
        torch.arange(best.ends.size(1), device=active.device) < settings.beam_size
    )
    finishing = best.ends & best.scores.isfinite() & among_k_best
    rank = best.scores / lengths.divisor(scored)
    rank = rank.masked_fill(~finishing, float("-inf"))
    token_lengths = scored - (best.token == settings.eos_id).long()  # before <eos>
    ended = best.scores, best.sequences, token_lengths, best.attention
    if best.unmet is not None:
        stuck.merge(active, rank.masked_fill(~best.unmet, float("-inf")), *ended)
        rank = rank.masked_fill(best.unmet, float("-inf"))
    done.merge(active, rank, *ended)


def has_stopped(
    beam: LiveBeam,
    settings: BeamSettings,
    lengths: Lengths,
    done: FinishedCandidates,
) -> torch.Tensor:
    """(a,) whether each active sentence stops with the live ``beam`` (the
    module's stopping rules)."""
    kth_done = done.rank[beam.active, settings.nbest - 1]  # the n-best's last
    if settings.stopping == "exact":
        reachable = beam.scores.max(dim=1).values / lengths.best_possible[beam.active]
        stopped = kth_done >= reachable
    elif settings.stopping == "k_finished":  # k kept means at least k finished
        stopped = done.rank[beam.active].isfinite().all(dim=1)
    else:
        stopped = torch.zeros_like(kth_done, dtype=torch.bool)
    at_limit = beam.length >= lengths.limits[beam.active]
    return stopped | at_limit | ~beam.scores.isfinite().any(dim=1)
