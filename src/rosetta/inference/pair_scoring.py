"""How likely a model finds given translations: forced decoding.

For a source x and a target y = y_1 … y_L (its ``<eos>`` the last token),
the model's log-probability of the pair is the sum over the target's tokens

    log P(y | x) = Σ_t log P(y_t | y_<t, x)

each term read off one teacher-forced pass: the decoder is fed
``<bos> y_1 … y_(L−1)`` and position t's distribution scores y_t, as search
scores the token it picks (``<bos>`` ruled out, as search never picks it).
The normalised score divides by the length as beam search ranks
hypotheses (``(1/L^α) Σ``, or GNMT's penalty), so that the score of a
model's own translation is the one ``translate --format jsonl`` gives it.

A multilingual model told its languages reads the source with its
language's token first, and its target starts with the forced target
language's token, scored 0 and counted in L, as in search. Pairs are
scored in batches of similar lengths, the results in input order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from rosetta.data.batching import Example, collate
from rosetta.data.vocab import BOS_ID, EOS_ID, PAD_ID
from rosetta.errors import RosettaError
from rosetta.inference.translator import Translator
from rosetta.runtime.precision import autocast
from rosetta.search.beam import normalized_score
from rosetta.search.controls import without_start
from rosetta.search.options import SearchOptions

if TYPE_CHECKING:
    from rosetta.inference.text_translator import TextTranslator


@dataclass(frozen=True)
class PairScore:
    """One pair's ``score`` (Σ log P, ``<eos>`` included), its score
    normalised by length as search ranks, and each target token's log P
    (the forced language token's 0 among them, ``<eos>``'s last)."""

    score: float
    normalized_score: float
    token_scores: list[float]

    def to_dict(self, line: int, with_tokens: bool = False) -> dict:
        found = {
            "line": line,
            "score": self.score,
            "normalized_score": self.normalized_score,
            "tokens": len(self.token_scores),
        }
        if with_tokens:
            found["token_scores"] = self.token_scores
        return found


def score_pairs(
    translator: TextTranslator,
    sources: list[str],
    targets: list[str],
    options: SearchOptions | None = None,
    batch_size: int | None = None,
    progress: Callable[[int], object] | None = None,
) -> list[PairScore]:
    """Each pair's ``PairScore`` under ``translator``'s model; ``options``
    give the length normalisation (``alpha``, ``penalty``)."""
    if len(sources) != len(targets):
        raise RosettaError(f"{len(sources)} sources but {len(targets)} targets")
    if not isinstance(translator, Translator):  # NAT, CTranslate2
        raise RosettaError(
            "scoring given translations needs a model that decodes token by "
            "token (a Transformer or a recurrent model), with --engine rosetta"
        )
    options = options or SearchOptions()
    start = translator.forced_starts(1, None, None)
    forced = list(start[0].prefix) if start else []
    encode_target = translator.tokenizers.tgt.encode
    pairs = [
        (translator.encode(source), [*forced, *encode_target(target)])
        for source, target in zip(sources, targets, strict=True)
    ]
    limit = translator.position_limit
    for number, (_, target) in enumerate(pairs, start=1):
        if limit is not None and len(target) + 1 > limit:
            raise RosettaError(
                f"line {number}: {len(target) + 1} target tokens; the model "
                f"takes at most {limit} (model.max_positions)"
            )
    size = batch_size or translator.config.decode.batch_size
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][1]))
    found: list[PairScore | None] = [None] * len(pairs)
    model = translator.model
    model.eval()
    for begin in range(0, len(order), size):
        chunk = order[begin : begin + size]
        scores = _score_batch(translator, [pairs[i] for i in chunk], len(forced))
        for i, token_scores in zip(chunk, scores, strict=True):
            total = sum(token_scores)
            normalized = normalized_score(
                total, len(token_scores), options.alpha, options.penalty
            )
            found[i] = PairScore(total, normalized, token_scores)
        if progress is not None:
            progress(len(chunk))
    return found  # type: ignore[return-value]


@torch.no_grad()
def _score_batch(
    translator: TextTranslator,
    pairs: list[tuple[list[int], list[int]]],
    free: int,
) -> list[list[float]]:
    """Each pair's target token log-probabilities (``<eos>`` last; the
    first ``free`` forced tokens 0)."""
    device, model = translator.device, translator.model
    batch = collate([Example(src, []) for src, _ in pairs]).to(device)
    targets = [[*tgt, EOS_ID] for _, tgt in pairs]
    longest = max(map(len, targets))
    fed = torch.full((len(pairs), longest), PAD_ID, dtype=torch.long)
    wanted = torch.full((len(pairs), longest), PAD_ID, dtype=torch.long)
    for row, target in enumerate(targets):
        fed[row, : len(target)] = torch.tensor([BOS_ID, *target[:-1]])
        wanted[row, : len(target)] = torch.tensor(target)
    fed, wanted = fed.to(device), wanted.to(device)
    with autocast(device, translator.precision):
        state = model.init_state(
            model.encode(batch.src, batch.src_mask), batch.src_mask
        )
        log_probs, _ = model.steps(fed, state)  # (n, T, V)
    log_probs = without_start(log_probs.float())
    picked = log_probs.gather(2, wanted.unsqueeze(2)).squeeze(2).double()
    picked[:, :free] = 0.0  # the forced language token, as search scores it
    return [picked[row, : len(target)].tolist() for row, target in enumerate(targets)]
