"""A batch's forced prefixes fed to the model in one pass (``feed_prefix``),
not one step per token: the same scores and state as forcing them step by
step (``BatchConstraints.rule_out``), the first ``free`` tokens of each
scored 0 (a target-language token, forced as ``transformers`` forces it).
A search takes its first step's log-probabilities from the fed prefix, and
the next ones from the model (``NextTokens``)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from rosetta.interfaces.encoder_decoder import DecoderState, EncoderDecoder
from rosetta.search.constraints import BatchConstraints
from rosetta.search.controls import Controls, next_token_log_probs, without_start


@dataclass
class FedPrefix:
    """A batch's common prefix, fed in one pass: its ``length`` ``m``, its
    ``tokens`` (n, m), their ``scores`` (n,) (Σ log P), the log-probabilities
    of the token after them (n, V), and the state after them."""

    length: int
    tokens: torch.Tensor
    scores: torch.Tensor
    after: torch.Tensor
    state: DecoderState


def feed_prefix(
    model: EncoderDecoder,
    state: DecoderState,
    constraints: BatchConstraints | None,
    controls: Controls,
    limits: torch.Tensor,
    bos_id: int,
) -> FedPrefix | None:
    """The tokens that every sentence's prefix starts with, fed after
    ``<bos>`` in one pass; None where there are none, or where the controls
    or excluded phrases could rule out a prefix token (forcing it step by
    step then says so: the hypothesis stops, incomplete)."""
    if constraints is None or constraints.excluded:
        return None
    if controls.banned or controls.no_repeat_ngram:
        return None
    m = int(constraints.prefix_length.min()) if len(constraints.sentences) else 0
    m = min(m, int(limits.min()) - 1)  # room left for a token after them
    if m < 1:
        return None
    tokens = constraints.prefix[:, :m]
    bos = tokens.new_full((len(tokens), 1), bos_id)
    # the tokens every sentence scores 0 need no log-probabilities: a
    # 256k-word model's projection saved for its forced language token
    skip = min(int(constraints.free.min()), m)
    log_probs, state = model.steps(torch.cat([bos, tokens], dim=1), state, skip)
    without_start(log_probs)
    picked = log_probs[:, : m - skip].gather(2, tokens[:, skip:, None]).squeeze(2)
    position = torch.arange(skip, m, device=picked.device)
    scored = position >= constraints.free.unsqueeze(1)
    scores = picked.where(scored, 0.0).double().sum(1)
    return FedPrefix(m, tokens, scores, log_probs[:, m - skip], state)


class NextTokens:
    """Each step's next-token log-probabilities (rows, V) and the state after
    it: at the first call, those a ``FedPrefix`` already computed (the
    controls applied to them), after it ``model.step``."""

    def __init__(
        self,
        model: EncoderDecoder,
        controls: Controls,
        fed: FedPrefix | None = None,
        need_attention: bool = False,
    ):
        self.model, self.controls, self.need_attention = model, controls, need_attention
        self.pending = None if fed is None else fed.after

    def __call__(
        self, prev: torch.Tensor, state: DecoderState, prefixes: torch.Tensor
    ) -> tuple[torch.Tensor, DecoderState]:
        """``prev`` (rows,) the last tokens, ``prefixes`` (rows, t) each
        row's output so far."""
        if self.pending is not None:
            log_probs, self.pending = self.pending, None
            self.controls.rule_out(log_probs, prefixes)
            return log_probs, state
        return next_token_log_probs(
            self.model, prev, state, prefixes, self.controls, self.need_attention
        )
