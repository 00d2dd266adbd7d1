"""Beam search's finished candidates: the k best ended sequences per sentence."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from rosetta.search.greedy import Hypothesis


def expand_like(index: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """(a, m) beam index -> an index for gathering dim 1 of ``target``."""
    shape = (*index.shape, *target.shape[2:])
    return index.view(*index.shape, *([1] * (target.dim() - 2))).expand(shape)


@dataclass
class FinishedCandidates:
    """Per sentence (row) its k best finished candidates, best first; an empty
    slot ranks -inf. Updated in place as the search goes."""

    rank: torch.Tensor  # (n, k) float64: the length-normalised score
    score: torch.Tensor  # (n, k) float64: Σ log P
    length: torch.Tensor  # (n, k): tokens before <eos>
    tokens: torch.Tensor  # (n, k, steps), padded with <eos>
    attention: list[list[torch.Tensor | None]]  # [n][k], each (t, layers, heads, S)

    @classmethod
    def empty(
        cls, n: int, k: int, steps: int, eos_id: int, device: torch.device
    ) -> FinishedCandidates:
        def minus_infinity() -> torch.Tensor:
            return torch.full((n, k), float("-inf"), dtype=torch.float64, device=device)

        return cls(
            rank=minus_infinity(),
            score=minus_infinity(),
            length=torch.zeros((n, k), dtype=torch.long, device=device),
            tokens=torch.full((n, k, steps), eos_id, dtype=torch.long, device=device),
            attention=[[None] * k for _ in range(n)],
        )

    def merge(
        self,
        active: torch.Tensor,
        rank: torch.Tensor,
        scores: torch.Tensor,
        sequences: torch.Tensor,
        lengths: torch.Tensor,
        attention: torch.Tensor | None,
    ) -> None:
        """Keep the k best per sentence of the old and the new candidates:
        the sequences (a, w, t) of sentences ``active`` that finished, their
        ``lengths`` (a, w) before any ``<eos>`` (rank -inf for the others)."""
        k, steps = self.rank.size(1), self.tokens.size(2)
        if not bool(rank.isfinite().any()):
            return
        padded = torch.nn.functional.pad(
            sequences, (0, steps - sequences.size(2)), value=0
        )
        all_rank = torch.cat([self.rank[active], rank], dim=1)  # (a, k + w)
        best_rank, best = all_rank.topk(k, dim=1)
        from_old = best < k

        def pick(old: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
            merged = torch.cat([old, new], dim=1)
            return merged.gather(1, expand_like(best, merged))

        self.rank[active] = best_rank
        self.score[active] = pick(self.score[active], scores)
        self.length[active] = pick(self.length[active], lengths)
        self.tokens[active] = pick(self.tokens[active], padded)
        if attention is not None:  # rare and small: bookkeeping per entry
            for row, sentence in enumerate(active.tolist()):
                old = self.attention[sentence]
                self.attention[sentence] = [
                    old[j] if from_old[row, i] else attention[row, j - k]
                    for i, j in enumerate(best[row].tolist())
                ]

    def hypotheses(
        self, nbest: int, src_lengths: list[int], complete: bool = True
    ) -> list[list[Hypothesis]]:
        """Per sentence its ``nbest`` best candidates (fewer if fewer ended),
        marked ``complete``; attention cut to the sentence's own source
        tokens."""
        ranks, scores = self.rank.tolist(), self.score.tolist()
        lengths, tokens = self.length.tolist(), self.tokens.tolist()
        results = []
        for i in range(len(ranks)):
            found = []
            for j in range(len(ranks[i])):  # already sorted, best first
                if len(found) == nbest or ranks[i][j] == float("-inf"):
                    break
                attention = self.attention[i][j]
                found.append(
                    Hypothesis(
                        tokens[i][j][: lengths[i][j]],
                        scores[i][j],
                        normalized_score=ranks[i][j],
                        complete=complete,
                        attention=None
                        if attention is None
                        else attention[..., : src_lengths[i]].cpu(),  # no padding
                    )
                )
            results.append(found)
        return results
