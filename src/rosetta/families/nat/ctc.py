"""Connectionist temporal classification (CTC): a length model without
fertilities.

The decoder reads the source upsampled: every source token (``<eos>``
included) copied ``λ`` times (``model.upsample``), so ``T = λ·S`` decoder
positions for a source of ``S``. Each position predicts a token or the
*blank* ``∅``. An *alignment* ``a = a_1 … a_T`` gives the output
``collapse(a)``: merge runs of the same symbol, then drop the blanks, so
``a a ∅ b b ∅ b`` gives ``a b b`` (the blank between the ``b``s keeps
them apart). The positions are predicted independently, so

    P(y | x) = Σ_{a : collapse(a) = y} Π_t p_t(a_t | x)

and the loss is ``−log P(y | x)``, summed over every alignment by dynamic
programming (PyTorch's ``ctc_loss``). A target fits ``T`` positions only
if ``T ≥ |y| + r``, ``r`` the number of adjacent repeats in ``y``, each of
which needs a blank between its copies (``ctc_fits``).

Decoding takes each position's most likely symbol and collapses them: one
pass, and the length falls out of the blanks. The blank is the output row of
``<bos>``, which a non-autoregressive target never holds, so the vocabulary
and a tied output projection stay as they are.

Glancing training with CTC (``rosetta.families.nat.glancing``) needs to know
which reference token each position stands for: the most likely alignment
(``best_alignment``), found by the same dynamic programme with max instead
of sum (Viterbi).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from rosetta.data.encoded_pairs import EncodedPairs
from rosetta.data.vocab import BOS_ID, PAD_ID

BLANK_ID = BOS_ID


def collapse(symbols: list[int], blank: int = BLANK_ID) -> list[int]:
    """The output of an alignment: runs merged, blanks dropped."""
    return [symbols[position] for position in run_starts(symbols, blank)]


def run_starts(symbols: list[int], blank: int = BLANK_ID) -> list[int]:
    """Where the tokens ``collapse`` keeps start: the first position of
    every run that is not of blanks."""
    starts, previous = [], None
    for position, symbol in enumerate(symbols):
        if symbol != previous and symbol != blank:
            starts.append(position)
        previous = symbol
    return starts


def ctc_negative_log_likelihood(
    log_probs: torch.Tensor,
    input_mask: torch.Tensor,
    targets: torch.Tensor,
    blank: int = BLANK_ID,
) -> torch.Tensor:
    """``−log P(y | x)`` summed over the batch (module docstring).

    Args:
        log_probs: (n, T, V) float32 log-probabilities of every position.
        input_mask: (n, T) True at a row's real decoder positions.
        targets: (n, L) token ids padded with ``PAD_ID``.
    """
    target_mask = targets != PAD_ID
    return F.ctc_loss(
        log_probs.transpose(0, 1),
        targets,
        input_mask.sum(1),
        target_mask.sum(1),
        blank=blank,
        reduction="sum",
        zero_infinity=True,  # an infeasible pair adds nothing, never inf
    )


def extended_labels(targets: torch.Tensor, blank: int = BLANK_ID) -> torch.Tensor:
    """(n, L) targets -> (n, 2L+1) ``∅ y_1 ∅ y_2 … y_L ∅``: the states an
    alignment walks through."""
    n, length = targets.shape
    labels = torch.full((n, 2 * length + 1), blank, dtype=targets.dtype)
    labels[:, 1::2] = targets
    return labels.to(targets.device)


@torch.no_grad()
def best_alignment(
    log_probs: torch.Tensor,
    input_mask: torch.Tensor,
    targets: torch.Tensor,
    blank: int = BLANK_ID,
) -> torch.Tensor:
    """The most likely alignment of each target: (n, T) symbols, blank where
    the alignment has one, ``PAD_ID`` past a row's positions.

    Viterbi over the extended labels ``z`` (``extended_labels``): state ``s``
    at position ``t`` is reached from ``s`` (the symbol held), ``s − 1`` (the
    next one) or ``s − 2`` (skipping a blank, allowed when ``z_s`` is not a
    blank and differs from ``z_{s−2}``). A row's alignment ends in its last
    token or the blank after it. Rows that cannot fit their target
    (``ctc_fits``) get an alignment that does not collapse to it.
    """
    n, steps, _ = log_probs.shape
    lengths = (targets != PAD_ID).sum(1)
    positions = input_mask.sum(1)
    labels = extended_labels(targets.masked_fill(targets == PAD_ID, blank), blank)
    states = labels.size(1)
    emit = log_probs.float().gather(2, labels[:, None, :].expand(-1, steps, -1))
    minus_inf = torch.tensor(float("-inf"), device=log_probs.device)
    index = torch.arange(states, device=log_probs.device)
    may_skip = torch.zeros_like(labels, dtype=torch.bool)
    may_skip[:, 2:] = (labels[:, 2:] != blank) & (labels[:, 2:] != labels[:, :-2])
    valid = index[None, :] < (2 * lengths + 1)[:, None]
    score = torch.where(index[None, :] < 2, emit[:, 0], minus_inf)
    score = score.masked_fill(~valid, float("-inf"))
    back = torch.zeros(n, steps, states, dtype=torch.long, device=log_probs.device)
    for t in range(1, steps):
        stay = score
        advance = F.pad(score, (1, 0), value=float("-inf"))[:, :-1]
        skip = F.pad(score, (2, 0), value=float("-inf"))[:, :-2]
        skip = skip.masked_fill(~may_skip, float("-inf"))
        best, step = torch.stack([stay, advance, skip], dim=-1).max(-1)
        moved = (best + emit[:, t]).masked_fill(~valid, float("-inf"))
        live = (t < positions)[:, None]  # rows shorter than t keep their scores
        score = torch.where(live, moved, score)
        back[:, t] = torch.where(live, step, torch.zeros_like(step))
    # end in the last token (2L−1) or the blank after it (2L)
    last = 2 * lengths
    ends = torch.stack([last, (last - 1).clamp(min=0)], dim=1)
    state = ends.gather(1, score.gather(1, ends).argmax(1, keepdim=True))[:, 0]
    path = torch.full((n, steps), PAD_ID, dtype=labels.dtype, device=labels.device)
    rows = torch.arange(n, device=log_probs.device)
    for t in range(steps - 1, -1, -1):
        live = t < positions
        path[:, t] = torch.where(live, labels[rows, state], path[:, t])
        state = torch.where(live, state - back[rows, t, state], state)
    return path


def ctc_fits(pairs: EncodedPairs, upsample: int) -> np.ndarray:
    """Which pairs' targets fit ``upsample`` decoder positions per source
    token (``<eos>`` included): ``T ≥ |y| + r`` (module docstring)."""
    tokens, offsets = pairs.tokens["tgt"], pairs.offsets["tgt"]
    repeated = np.zeros(len(tokens), dtype=np.int64)
    if len(tokens) > 1:
        repeated[1:] = tokens[1:] == tokens[:-1]
    repeated[offsets[:-1][offsets[:-1] < len(tokens)]] = 0  # a pair's first token
    totals = np.concatenate([[0], np.cumsum(repeated)])
    repeats = totals[offsets[1:]] - totals[offsets[:-1]]
    if pairs.rows is not None:
        repeats = repeats[pairs.rows]
    positions = upsample * (pairs.src_lengths.astype(np.int64) + 1)
    return pairs.tgt_lengths + repeats <= positions
