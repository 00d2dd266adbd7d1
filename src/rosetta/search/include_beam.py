"""Beam search's part in phrases to include (dynamic beam allocation,
``rosetta.search.constraints``): what the plain beam does, with three steps
added.

- Each live prefix counts the include tokens it has met (``matched``, (a, k,
  P)), from the start and through the fed prefix.
- A row's candidates are its best tokens and also the next token of each
  phrase it has not met (``add_wanted``), so a phrase the model would not
  reach for still gets a candidate.
- The beam's places go to the candidates by bank (how much they have met),
  not by score alone (``choose``); a candidate that ends with a phrase unmet
  is incomplete (``unmet``).
"""

from __future__ import annotations

import torch

from rosetta.search.constraints import BatchConstraints, allocate
from rosetta.search.finished import expand_like


class IncludeAllocation:
    """The include phrases of a batch's sentences, as beam search uses them."""

    def __init__(self, constraints: BatchConstraints):
        self.constraints = constraints

    @classmethod
    def of(cls, constraints: BatchConstraints | None) -> IncludeAllocation | None:
        """None where no sentence has a phrase to include."""
        if constraints is None or not constraints.includes:
            return None
        return cls(constraints)

    def start(self, active: torch.Tensor, k: int, tokens: torch.Tensor) -> torch.Tensor:
        """(a, k, P) the include tokens met by each of the ``k`` slots of
        sentences ``active`` (a,) after their first ``tokens`` (a, k, m)."""
        matched = self.constraints.start(active).unsqueeze(1).expand(-1, k, -1)
        for column in range(tokens.size(2)):
            matched = self.constraints.advance(
                matched, tokens[..., column], active.unsqueeze(1).expand(-1, k)
            )
        return matched

    def add_wanted(
        self,
        log_probs: torch.Tensor,
        row_scores: torch.Tensor,
        row_tokens: torch.Tensor,
        row_matched: torch.Tensor,
        row_sentence: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """A row's best tokens ``row_tokens`` (rows, m) and their scores, with
        the next token of each phrase the row has not met appended (rows, m +
        P); a wanted token already among them, or wanted twice, or no token
        (a phrase met, an empty slot) scores -inf."""
        wanted = self.constraints.next_tokens(row_matched, row_sentence)  # (rows, P)
        wanted_scores = log_probs.gather(1, wanted.clamp(min=0)).to(row_scores)
        repeated = (wanted[:, :, None] == row_tokens[:, None, :]).any(2)
        repeated |= (wanted[:, :, None] == wanted[:, None, :]).tril(-1).any(2)
        unwanted = (wanted < 0) | repeated
        scores = torch.cat(
            [row_scores, wanted_scores.masked_fill(unwanted, float("-inf"))], 1
        )
        return scores, torch.cat([row_tokens, wanted.clamp(min=0)], 1)

    def choose(
        self,
        candidates: torch.Tensor,
        row_tokens: torch.Tensor,
        live_matched: torch.Tensor,
        active: torch.Tensor,
        width: int,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The ``width`` candidates the beam keeps, by bank: of ``candidates``
        (a, k, m), the expansions of live prefixes ``live_matched`` (a, k, P)
        by ``row_tokens`` (a, k, m), their scores (a, width), their index
        among the k·m, and what each has met (a, width, P)."""
        a, k, per_row = row_tokens.shape
        expanded = live_matched.unsqueeze(2).expand(-1, -1, per_row, -1)
        sentence = active[:, None, None].expand(-1, k, per_row)
        matched = self.constraints.advance(expanded, row_tokens, sentence)
        matched = matched.reshape(a, k * per_row, -1)
        banks = self.constraints.met(matched, active.unsqueeze(1))
        flat = candidates.view(a, -1)
        index = allocate(flat, banks, self.constraints.needed[active], width)
        chosen = matched.gather(1, expand_like(index, matched))
        return flat.gather(1, index), index, chosen

    def unmet(self, matched: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        """(a, w) whether each candidate of sentences ``active`` (a,) has a
        phrase to include still unmet (``matched`` (a, w, P))."""
        return ~self.constraints.all_met(matched, active.unsqueeze(1))
