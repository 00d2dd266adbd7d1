"""One hypothesis for one input, as every translator returns it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class Translation:
    """One hypothesis for one input.

    ``attention`` (when asked for) has one row per scored output token (the
    tokens, then ``<eos>`` if it was produced), per layer and head, over
    ``source_tokens``: shape (L, layers, heads, S). A non-autoregressive
    model adds its ``fertilities``: how many target tokens each source token
    (``<eos>`` included) gave. ``complete`` is False where the search's
    controls left no token to go on with, so the translation stops short
    (``rosetta.search.controls``).
    """

    text: str
    score: float  # Σ log P(y_t | y_<t, c), <eos> included when produced
    normalized_score: float  # score / penalty(L): what beam search ranks by
    token_ids: list[int]
    tokens: list[str]
    source_tokens: list[str]
    attention: torch.Tensor | None = None
    fertilities: list[int] | None = None  # a NAT's, one per source token
    complete: bool = True
    constraints_met: bool | None = None  # None: the input had no constraints
    alignment: str | None = None  # Pharaoh ``i-j`` word links, when asked for

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: attention as nested lists rounded to 4 decimals."""
        record: dict[str, Any] = {
            "text": self.text,
            "score": self.score,
            "normalized_score": self.normalized_score,
            "complete": self.complete,
            "token_ids": self.token_ids,
            "tokens": self.tokens,
            "source_tokens": self.source_tokens,
        }
        if self.constraints_met is not None:
            record["constraints_met"] = self.constraints_met
        if self.alignment is not None:
            record["alignment"] = self.alignment
        if self.fertilities is not None:
            record["fertilities"] = self.fertilities
        if self.attention is not None:
            record["attention"] = torch.round(self.attention, decimals=4).tolist()
        return record
