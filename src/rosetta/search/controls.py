"""What every search asks of a model at each step, in one place: the
log-probabilities of the next token, with the tokens that no search may
pick set to -inf. Greedy search, sampling, beam search and exhaustive
search all take them from ``next_token_log_probs``, so a control written
here holds in each of them alike.

Always: ``<pad>`` and ``<bos>`` are never a next token (no training target
holds either). The probabilities are those of every token but ``<bos>``
(``without_start``): an imported model's ``<bos>`` row repeats the row its
decoder starts from (MarianMT's ``<pad>``, fairseq's ``</s>``), which would
otherwise count twice in the softmax; the model's own tokens are normalised
as the model was. ``<pad>`` is then ruled out after the softmax, which is
how ``transformers`` bans it (``bad_words_ids``).

On request (``Controls``): a minimum length (``<eos>`` ruled out before it),
no n-gram twice in one output, and banned phrases (the last token of any
spelling of one is ruled out after the rest of it, ``rosetta.search.bans``).

Controls can leave a row no token at all (a minimum length beyond what
n-gram blocking and bans allow). Every search then ends that hypothesis
where it stands and marks it incomplete (``Hypothesis.complete``), rather
than pick a token of probability zero; ``Controls.longest_output`` says up
front when no output of a minimum length exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from rosetta.data.vocab import BOS_ID, PAD_ID
from rosetta.interfaces.encoder_decoder import DecoderState, EncoderDecoder
from rosetta.search.bans import Spellings

NEVER_NEXT = [PAD_ID, BOS_ID]


@dataclass(frozen=True)
class Controls:
    """What a search rules out whatever the model says.

    Attributes:
        min_length: ``<eos>`` is ruled out until an output holds this many
            tokens.
        no_repeat_ngram: no n-gram of this many tokens twice in an output
            (0: off).
        banned: phrases no output holds, as their spellings (a sequence of
            token ids is taken as its one spelling).
        eos_id: the end token's id (which a minimum length needs).
    """

    min_length: int = 0
    no_repeat_ngram: int = 0
    banned: tuple[Spellings, ...] = ()
    eos_id: int | None = None

    def __post_init__(self) -> None:
        if self.min_length and self.eos_id is None:  # -1 would ban the last token
            raise ValueError("a minimum length needs the end token's id (eos_id)")
        object.__setattr__(self, "banned", as_spellings(self.banned))

    def check_limits(self, limits: torch.Tensor) -> None:
        """``ValueError`` if the minimum length is beyond the output limit
        (n,) of a sentence of the batch: no output could end."""
        if self.min_length and bool((limits < self.min_length).any()):
            row = int((limits < self.min_length).nonzero()[0, 0])
            raise ValueError(
                f"minimum length {self.min_length} is beyond the output limit "
                f"of sentence {row} of the batch: {int(limits[row])} tokens"
            )

    def longest_output(self, vocabulary: int) -> int | None:
        """The most tokens an output over ``vocabulary`` tokens can hold under
        these controls before ``<eos>``, where they bound it (else None): with
        ``A`` tokens left (not ``<pad>``, ``<bos>``, ``<eos>`` or banned
        alone), no n-gram of ``n`` twice allows at most ``A^n + n - 1``
        tokens (a de Bruijn sequence's length)."""
        single = set().union(*(phrase.single_tokens for phrase in self.banned))
        never = {*NEVER_NEXT, *single} | ({self.eos_id} - {None})
        usable = vocabulary - len(never)
        if usable <= 0:
            return 0
        n = self.no_repeat_ngram
        if not n or n * usable.bit_length() > 62:  # no bound, or none to reach
            return None
        return usable**n + n - 1

    def rule_out(self, log_probs: torch.Tensor, prefixes: torch.Tensor) -> None:
        """Set to -inf, in place, every next token of ``log_probs`` (n, V)
        that would break a control after ``prefixes`` (n, t), each row's
        tokens so far."""
        log_probs[:, NEVER_NEXT] = float("-inf")
        t = prefixes.size(1)
        if t < self.min_length:
            log_probs[:, self.eos_id] = float("-inf")
        for phrase in self.banned:
            phrase.rule_out(log_probs, prefixes)
        n = self.no_repeat_ngram
        if n and t >= n:  # every earlier n-gram whose first n-1 match the tail
            windows = prefixes.unfold(1, n, 1)  # (rows, t - n + 1, n)
            tail = prefixes[:, t - n + 1 :].unsqueeze(1)  # (rows, 1, n - 1)
            repeats = (windows[:, :, : n - 1] == tail).all(dim=2)
            rows, where = repeats.nonzero(as_tuple=True)
            log_probs[rows, windows[rows, where, n - 1]] = float("-inf")


def as_spellings(
    banned: Sequence[Spellings | Sequence[int]],
) -> tuple[Spellings, ...]:
    """Banned phrases as ``Spellings``; a sequence of token ids is its own
    one spelling."""
    return tuple(
        phrase if isinstance(phrase, Spellings) else Spellings.of_tokens(phrase)
        for phrase in banned
    )


NO_CONTROLS = Controls()


def without_start(log_probs: torch.Tensor) -> torch.Tensor:
    """``log_probs`` (..., V) normalised over every token but ``<bos>``:
    ``log p_i - log(1 - p_bos)``, in place."""
    start = log_probs[..., BOS_ID : BOS_ID + 1].exp().clamp(max=1.0 - 1e-6)
    return log_probs.sub_(torch.log1p(-start))


def next_token_log_probs(
    model: EncoderDecoder,
    prev_tokens: torch.Tensor,
    state: DecoderState,
    prefixes: torch.Tensor,
    controls: Controls = NO_CONTROLS,
    need_attention: bool = False,
) -> tuple[torch.Tensor, DecoderState]:
    """``model.step``: (n,) previous tokens -> (n, V) log-probabilities and
    the next state, -inf for what ``controls`` rule out after ``prefixes``
    (n, t), each row's output so far."""
    if need_attention:
        log_probs, state = model.step(prev_tokens, state, need_attention=True)
    else:
        log_probs, state = model.step(prev_tokens, state)
    without_start(log_probs)
    controls.rule_out(log_probs, prefixes)
    return log_probs, state
