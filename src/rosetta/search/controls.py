"""What every search asks of a model at each step, in one place: the
log-probabilities of the next token, with the tokens no search may pick
set to -inf.

``<pad>`` and ``<bos>`` are never a next token: no training target holds
either. They are ruled out after the softmax over every token (the model's
probabilities are left as they are, so a search's scores are the model's),
which is how ``transformers`` bans the ``<pad>`` that MarianMT models start
their decoder from (``bad_words_ids``).
"""

from __future__ import annotations

import torch

from rosetta.data.vocab import BOS_ID, PAD_ID
from rosetta.models.interface import DecoderState, EncoderDecoder

NEVER_NEXT = [PAD_ID, BOS_ID]


def next_token_log_probs(
    model: EncoderDecoder,
    prev_tokens: torch.Tensor,
    state: DecoderState,
    need_attention: bool = False,
) -> tuple[torch.Tensor, DecoderState]:
    """``model.step``: (n,) previous tokens -> (n, V) log-probabilities and
    the next state, -inf for the tokens in ``NEVER_NEXT``."""
    if need_attention:
        log_probs, state = model.step(prev_tokens, state, need_attention=True)
    else:
        log_probs, state = model.step(prev_tokens, state)
    log_probs[:, NEVER_NEXT] = float("-inf")
    return log_probs, state
