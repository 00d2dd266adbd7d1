"""Search for the non-autoregressive Transformer: fertilities, then every
target token at once.

- **Argmax.** Each source token takes its most likely fertility; the
  decoder then predicts all ``T = Σ f_i`` target tokens in one pass, each
  its most likely token.
- **Noisy parallel decoding (NPD).** The argmax fertilities and ``s − 1``
  fertility sequences drawn from the predicted distributions give ``s``
  candidate translations, decoded together in one batch. An autoregressive
  teacher scores every candidate in one teacher-forced pass
  (``teacher_log_probabilities``) and the best one is kept: the parallel
  decoder proposes, the sequential model only checks, which costs one
  pass, not one step per token.
- **CTC.** A model with ``length_model: ctc`` has no fertilities: every
  decoder position takes its most likely symbol, and runs and blanks
  collapse (``ctc_candidates``). Its score is the log-probability of that
  one alignment.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from rosetta.data.batching import pad
from rosetta.data.vocab import BOS_ID, EOS_ID, PAD_ID
from rosetta.families.nat.ctc import run_starts
from rosetta.families.nat.model import NonAutoregressiveTransformer
from rosetta.interfaces.encoder_decoder import EncoderDecoder
from rosetta.search.controls import without_start


@dataclass
class NATCandidate:
    """One decoded target for one source, with what made it.

    ``score`` is the model's own ``log P(y, f | x)``: the chosen tokens'
    log-probabilities plus those of the fertilities."""

    tokens: list[int]
    fertilities: list[int] | None  # one per source token, <eos> included; not CTC's
    score: float
    attention: torch.Tensor | None = None  # (T, layers, heads, S) when asked for


def draw_fertilities(
    logits: torch.Tensor, samples: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """(n, S, F+1) fertility logits -> (n, samples, S) fertility sequences:
    the argmax one first, then ``samples − 1`` drawn from the distributions."""
    best = logits.argmax(-1)[:, None, :]
    if samples == 1:
        return best
    n, length, choices = logits.shape
    probabilities = logits.float().softmax(-1).reshape(n * length, choices)
    drawn = torch.multinomial(probabilities, samples - 1, True, generator=generator)
    drawn = drawn.reshape(n, length, samples - 1).permute(0, 2, 1)
    return torch.cat([best, drawn], dim=1)


def cap_lengths(fertilities: torch.Tensor, limits: torch.Tensor) -> torch.Tensor:
    """Fertilities (n, S) whose totals are at most ``limits`` (n,): the tokens
    past a row's limit lose theirs, from the end of the source."""
    ends = fertilities.cumsum(1)
    limits = limits[:, None]
    return ends.clamp(max=limits) - (ends - fertilities).clamp(max=limits)


@torch.no_grad()
def nat_candidates(
    model: NonAutoregressiveTransformer,
    src: torch.Tensor,
    src_mask: torch.Tensor,
    samples: int = 1,
    *,
    max_lengths: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    need_attention: bool = False,
) -> list[list[NATCandidate]]:
    """Per source, its candidates from ``samples`` fertility sequences (the
    argmax one first), each distinct sequence decoded once, all of them in
    one batch. A candidate is at most ``max_lengths`` (n,) tokens long and
    never longer than the position table (``cap_lengths``)."""
    if samples < 1:
        raise ValueError(f"samples must be at least 1, got {samples}")
    model.eval()
    memory, fertility_logits = model.encode(src, src_mask)
    fertilities = draw_fertilities(fertility_logits, samples, generator)
    n, length = src.shape
    fertilities = fertilities.reshape(n * samples, length)
    table = model.encoder.embedding.positions.size(0)
    limits = torch.full((n,), table, device=src.device)
    if max_lengths is not None:
        limits = max_lengths.to(src.device).clamp(max=table)
    every = limits.repeat_interleave(samples)
    fertilities = cap_lengths(fertilities, every).reshape(n, samples, -1)
    # a peaked distribution draws the same sequence again and again
    distinct = [unique_rows(rows) for rows in fertilities]
    counts = [len(rows) for rows in distinct]
    fertilities = torch.cat(distinct)
    rows = torch.repeat_interleave(
        torch.arange(n, device=src.device), torch.tensor(counts, device=src.device)
    )
    src_rows, mask_rows = src[rows], src_mask[rows]
    features, tgt_mask, attention = model.decode(
        src_rows, mask_rows, memory[rows], fertilities, need_attention
    )
    log_probs = model.output_proj(features).float().log_softmax(-1)
    token_log_probs, tokens = log_probs.max(-1)
    fertility_log_probs = fertility_logits.log_softmax(-1)[rows].gather(
        -1, fertilities.clamp(max=model.max_fertility)[..., None]
    )[..., 0]
    scores = (token_log_probs * tgt_mask).sum(1) + (
        fertility_log_probs * mask_rows
    ).sum(1)
    # the decoder used the capped fertilities: report those
    fertilities = fertilities.clamp(max=model.max_fertility) * mask_rows
    lengths = tgt_mask.sum(1).tolist()
    source_lengths = src_mask.sum(1).tolist()
    found: list[list[NATCandidate]] = [[] for _ in range(n)]
    for row, (sentence, target_length, score) in enumerate(
        zip(rows.tolist(), lengths, scores.tolist(), strict=True)
    ):
        source_length = source_lengths[sentence]
        weights = None
        if attention is not None:
            weights = attention[row, :target_length, :, :, :source_length].float()
        found[sentence].append(
            NATCandidate(
                tokens=tokens[row, :target_length].tolist(),
                fertilities=fertilities[row, :source_length].tolist(),
                score=score,
                attention=weights,
            )
        )
    return found


@torch.no_grad()
def ctc_candidates(
    model: NonAutoregressiveTransformer,
    src: torch.Tensor,
    src_mask: torch.Tensor,
    *,
    max_lengths: torch.Tensor | None = None,
    need_attention: bool = False,
) -> list[list[NATCandidate]]:
    """Per source, the one candidate of a CTC model: each position's most
    likely symbol, runs merged and blanks dropped, cut to ``max_lengths``
    (n,) tokens. Its attention is that of each token's first position."""
    model.eval()
    memory, _ = model.encode(src, src_mask)
    features, positions, attention = model.decode(
        src, src_mask, memory, None, need_attention
    )
    log_probs = model.output_proj(features).float().log_softmax(-1)
    best, symbols = log_probs.max(-1)
    scores = (best * positions).sum(1).tolist()
    limits = positions.sum(1) if max_lengths is None else max_lengths
    source_lengths = src_mask.sum(1).tolist()
    found = []
    for row, (real, limit) in enumerate(
        zip(positions.sum(1).tolist(), limits.tolist(), strict=True)
    ):
        kept = run_starts(symbols[row, :real].tolist())[: int(limit)]
        weights = None
        if attention is not None:
            weights = attention[row, kept, :, :, : source_lengths[row]].float()
        tokens = symbols[row, kept].tolist()
        found.append([NATCandidate(tokens, None, scores[row], weights)])
    return found


def unique_rows(rows: torch.Tensor) -> torch.Tensor:
    """The distinct rows of (s, S), each where it first occurs, in order."""
    _, inverse = torch.unique(rows, dim=0, return_inverse=True)
    first = {}
    for position, label in enumerate(inverse.tolist()):
        first.setdefault(label, position)
    return rows[sorted(first.values())]


@torch.no_grad()
def teacher_log_probabilities(
    teacher: EncoderDecoder,
    sources: list[list[int]],
    targets: list[list[int]],
    device: torch.device,
    source_of: list[int] | None = None,
) -> torch.Tensor:
    """``log P(y + <eos> | x)`` under an autoregressive model for every target
    of token ids, all in one teacher-forced pass: (len(targets),).

    Target ``k`` is scored against source ``source_of[k]`` (default: source
    ``k``); each source is encoded once, however many targets it has."""
    if source_of is None:
        source_of = list(range(len(targets)))
    src = pad([[*s, EOS_ID] for s in sources]).to(device)
    src_mask = src != PAD_ID
    tgt_in = pad([[BOS_ID, *t] for t in targets]).to(device)
    tgt_out = pad([[*t, EOS_ID] for t in targets]).to(device)
    teacher.eval()
    state = teacher.init_state(teacher.encode(src, src_mask), src_mask)
    state = state.reorder(torch.tensor(source_of, device=device))
    features, _ = teacher.decoder(tgt_in, state, tgt_in != PAD_ID)
    # as every search scores: <bos> is left out of the softmax
    log_probs = without_start(teacher.output_proj(features).float().log_softmax(-1))
    picked = log_probs.gather(-1, tgt_out[..., None])[..., 0]
    return (picked * (tgt_out != PAD_ID)).sum(1)
