"""What batched beam search carries from step to step (``rosetta.search.beam``):
the live prefixes of the sentences still decoding (``LiveBeam``) and a
step's best expansions of them (``Expansions``), with the small moves
between the two: an expansion's attention history, refill, and dropping the
sentences that have stopped."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import torch

from rosetta.interfaces.encoder_decoder import DecoderState
from rosetta.search.fed_prefix import FedPrefix
from rosetta.search.finished import expand_like
from rosetta.search.include_beam import IncludeAllocation

Merge = tuple[  # what FinishedCandidates.merge takes, after the sentences
    torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None
]


@dataclass(frozen=True)
class LiveBeam:
    """The ``k`` live prefixes of each of the ``a`` active sentences.

    The decoder state has ``rows`` rows per sentence: 1 before the first
    step (its k slots would all hold ``<bos>``, so only slot 0 is live), k
    after it.
    """

    active: torch.Tensor  # (a,) each sentence's index in the batch
    scores: torch.Tensor  # (a, k) float64 Σ log P; -inf: no prefix in the slot
    tokens: torch.Tensor  # (a, k, t) the prefixes, without <bos>
    prev: torch.Tensor  # (a, rows) the last token of each state row
    rows: int
    attention: torch.Tensor | None = None  # (a, k, t, layers, heads, S)
    matched: torch.Tensor | None = None  # (a, k, P) include tokens met

    @classmethod
    def start(
        cls,
        n: int,
        k: int,
        bos_id: int,
        device: torch.device,
        fed: FedPrefix | None = None,
        includes: IncludeAllocation | None = None,
    ) -> LiveBeam:
        """One live prefix per sentence: ``<bos>``, and the fed prefix."""
        active = torch.arange(n, device=device)
        scores = torch.full((n, k), float("-inf"), dtype=torch.float64, device=device)
        scores[:, 0] = 0.0
        tokens = torch.zeros((n, k, 0), dtype=torch.long, device=device)
        prev = torch.full((n, 1), bos_id, dtype=torch.long, device=device)
        if fed is not None:
            scores[:, 0] = fed.scores
            tokens = fed.tokens.unsqueeze(1).expand(-1, k, -1).contiguous()
        matched = None if includes is None else includes.start(active, k, tokens)
        return cls(active, scores, tokens, prev, 1, matched=matched)

    @property
    def length(self) -> int:
        """``t``, the tokens each prefix holds."""
        return self.tokens.size(2)

    def prefixes(self) -> torch.Tensor:
        """(a * rows, t) the tokens so far of each state row."""
        a, t = self.active.numel(), self.length
        return self.tokens[:, : self.rows].reshape(a * self.rows, t)

    def last_tokens(self) -> torch.Tensor:
        """(a * rows,) the last token of each state row."""
        return self.prev.flatten()

    def row_sentence(self) -> torch.Tensor:
        """(a * rows,) the sentence of each state row."""
        return self.active.repeat_interleave(self.rows)

    def row_matched(self) -> torch.Tensor | None:
        """(a * rows, P) the include tokens each state row has met."""
        if self.matched is None:
            return None
        return self.matched[:, : self.rows].flatten(0, 1)

    def ended_where(self, no_token: torch.Tensor, divisor: float) -> Merge:
        """The live prefixes of the state rows ``no_token`` (a * rows,) as
        candidates that end where they stand (ranked by ``divisor``, the
        penalty of their length), the others ranked -inf."""
        a, t = self.active.numel(), self.length
        ended = torch.zeros_like(self.scores, dtype=torch.bool)
        ended[:, : self.rows] = no_token.view(a, self.rows)
        ended &= self.scores.isfinite()
        rank = (self.scores / divisor).masked_fill(~ended, float("-inf"))
        lengths = torch.full_like(self.scores, t, dtype=torch.long)
        return rank, self.scores, self.tokens, lengths, self.attention

    def state_rows(self, parent: torch.Tensor) -> torch.Tensor:
        """(a, w) the state row each expansion of slot ``parent`` (a, w)
        continues (before the first step, the -inf candidates of the dead
        slots point to the sentence's one row)."""
        first = torch.arange(self.active.numel(), device=parent.device).unsqueeze(1)
        return first * self.rows + parent.clamp(max=self.rows - 1)

    def keep(self, keep: torch.Tensor) -> LiveBeam:
        """Only the active sentences ``keep`` (indices)."""

        def rows(x: torch.Tensor | None) -> torch.Tensor | None:
            return None if x is None else x[keep]

        return LiveBeam(
            self.active[keep],
            self.scores[keep],
            self.tokens[keep],
            self.prev[keep],
            self.rows,
            rows(self.attention),
            rows(self.matched),
        )


@dataclass(frozen=True)
class Expansions:
    """A step's ``w`` best one-token expansions of each active sentence's
    live prefixes, best first."""

    scores: torch.Tensor  # (a, w) float64 Σ log P
    parent: torch.Tensor  # (a, w) the slot of the prefix each extends
    token: torch.Tensor  # (a, w) the token it adds
    ends: torch.Tensor  # (a, w) <eos>, or the sentence's length limit
    sequences: torch.Tensor  # (a, w, t + 1)
    attention: torch.Tensor | None = None  # (a, w, t + 1, layers, heads, S)
    matched: torch.Tensor | None = None  # (a, w, P) include tokens met
    unmet: torch.Tensor | None = None  # (a, w) a phrase to include unmet

    def take(self, index: torch.Tensor) -> Expansions:
        """The expansions ``index`` (a, w') of each sentence, in that order."""

        def pick(x: torch.Tensor | None) -> torch.Tensor | None:
            return None if x is None else x.gather(1, expand_like(index, x))

        return Expansions(*(pick(getattr(self, f.name)) for f in fields(self)))

    def refilled(self, k: int) -> Expansions:
        """The ``k`` best expansions that do not end (refill: ended ones
        are finished, and the beam keeps k live prefixes)."""
        width = self.ends.size(1)
        position = torch.arange(width, device=self.ends.device)
        order = torch.where(self.ends, position + width, position).argsort(dim=1)
        return self.take(order[:, :k])

    def live(self, beam: LiveBeam) -> LiveBeam:
        """The next step's live beam, of ``beam``'s sentences: these
        expansions (k of them), those that end as empty slots (-inf); the
        state is to be reordered to k rows per sentence."""
        return replace(
            beam,
            scores=self.scores.masked_fill(self.ends, float("-inf")),
            tokens=self.sequences,
            prev=self.token,
            rows=self.token.size(1),
            attention=self.attention,
            matched=self.matched,
        )


def attention_history(
    state: DecoderState, beam: LiveBeam, parent: torch.Tensor
) -> torch.Tensor:
    """Every expansion's attention history: its parent's, and the weights of
    the step just taken (``state.attention``): (a, w, t + 1, layers, heads,
    S)."""
    if state.attention is None:
        raise ValueError("this model does not report attention weights")
    a, rows = beam.active.numel(), beam.rows
    weights = state.attention[:, -1]  # (a * rows, layers, heads, S)
    weights = weights.reshape(a, rows, 1, *weights.shape[1:])
    history = (
        weights
        if beam.attention is None
        else torch.cat([beam.attention, weights], dim=2)
    )
    parent = parent.clamp(max=rows - 1)  # before the first step: one row
    return history.gather(1, expand_like(parent, history))
