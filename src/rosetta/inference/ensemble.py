"""Several models translating as one: an ensemble.

At every step each model gives its log-probabilities of the next token, over
every token but ``<bos>`` (``without_start``: what search takes from one
model), and the ensemble's are their weighted mean,

    log P(y_t | y_<t, x) = Σ_i w_i log P_i(y_t | y_<t, x),   Σ_i w_i = 1,

the rule of Marian's ensembles. The sum over a translation's tokens is then
the weighted mean of the models' scores of it (``rosetta score`` with the
same models says it), and every search, control and constraint works on it
as on one model's. An ensemble of one model, or of a model with itself,
decodes exactly as the model does.

The models read the same source ids and write the same target ids: they
share both vocabularies (a run trained from the same configuration, seeds
apart, does). Their architectures may differ (a Transformer beside a
recurrent model). Attention weights (alignments, ``--attention``) are the
first model's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any, Self

import torch
from torch import nn

from rosetta.data.vocab import BOS_ID
from rosetta.errors import RosettaError
from rosetta.inference.text_translator import TextTranslator
from rosetta.inference.translator import Translator
from rosetta.interfaces.encoder_decoder import DecoderState, EncoderDecoder
from rosetta.search.controls import without_start

# a share below this rounds log-probabilities away in float32 (0 x -inf)
SMALLEST_SHARE = 1e-6


def ensemble_weights(weights: Sequence[float] | None, count: int) -> list[float]:
    """``weights`` (one positive number per model; default equal) scaled to
    sum to 1; a ``RosettaError`` naming what is wrong otherwise."""
    if weights is None:
        return [1.0 / count] * count
    if isinstance(weights, str | bytes) or not isinstance(weights, Sequence):
        raise RosettaError(f"ensemble weights {weights!r}: a list of numbers")
    if len(weights) != count:
        raise RosettaError(
            f"{len(weights)} ensemble weights for {count} models: give one per model"
        )
    for weight in weights:
        if isinstance(weight, bool) or not isinstance(weight, Real):
            raise RosettaError(f"ensemble weight {weight!r}: a number")
        if not (math.isfinite(weight) and weight > 0):
            raise RosettaError(f"ensemble weight {weight}: a positive number")
    largest = max(weights)  # scaled by it first: no sum overflows
    total = math.fsum(weight / largest for weight in weights)
    shares = [weight / largest / total for weight in weights]
    if min(shares) < SMALLEST_SHARE:
        raise RosettaError(
            f"ensemble weights {list(weights)}: a model weighted less than "
            f"{SMALLEST_SHARE:g} of the total changes nothing; leave it out"
        )
    return shares


@dataclass(frozen=True)
class EnsembleState:
    """Each model's decoding state; ``attention`` is the first model's."""

    states: tuple[DecoderState, ...]

    @property
    def attention(self) -> torch.Tensor | None:
        return self.states[0].attention

    def reorder(self, index: torch.Tensor) -> Self:
        return type(self)(tuple(state.reorder(index) for state in self.states))


class Ensemble(nn.Module):
    """Models driven as one through ``encode``, ``init_state``, ``step`` and
    ``steps``, the calls search makes (``rosetta.interfaces.encoder_decoder``)."""

    def __init__(self, models: Sequence[EncoderDecoder], weights: Sequence[float]):
        super().__init__()
        if len(models) != len(weights):
            raise ValueError(f"{len(weights)} weights for {len(models)} models")
        self.models = nn.ModuleList(models)
        self.weights = tuple(weights)

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> tuple[Any, ...]:
        return tuple(model.encode(src, src_mask) for model in self.models)

    def init_state(
        self, memory: tuple[Any, ...], src_mask: torch.Tensor
    ) -> EnsembleState:
        return EnsembleState(
            tuple(
                model.init_state(own, src_mask)
                for model, own in zip(self.models, memory, strict=True)
            )
        )

    def step(
        self,
        prev_tokens: torch.Tensor,
        state: EnsembleState,
        need_attention: bool = False,
    ) -> tuple[torch.Tensor, EnsembleState]:
        """(n,) previous tokens -> (n, V) the weighted mean log-probabilities."""
        # each model asked alike: one asked for its attention weights may
        # compute them on another path, equal only to rounding
        return self._combined(
            lambda model, own: model.step(prev_tokens, own, need_attention), state
        )

    def steps(
        self, tokens: torch.Tensor, state: EnsembleState, first: int = 0
    ) -> tuple[torch.Tensor, EnsembleState]:
        """``step`` over (n, T) tokens in one pass: (n, T - first, V)."""
        return self._combined(lambda model, own: model.steps(tokens, own, first), state)

    def _combined(
        self, call: Callable[[Any, Any], tuple[torch.Tensor, Any]], state: EnsembleState
    ) -> tuple[torch.Tensor, EnsembleState]:
        """``call`` on each model with its own state: their weighted mean
        log-probabilities, and their next states."""
        found, states = [], []
        for model, own in zip(self.models, state.states, strict=True):
            log_probs, own = call(model, own)
            found.append(log_probs)
            states.append(own)
        return self._mean(found), EnsembleState(tuple(states))

    def _mean(self, found: list[torch.Tensor]) -> torch.Tensor:
        """Σ w_i log P_i over every token but ``<bos>``, whose entry is -inf
        (so search's own ``without_start`` leaves the mean as it is)."""
        mean = None
        for weight, log_probs in zip(self.weights, found, strict=True):
            log_probs = without_start(log_probs.float())
            log_probs[..., BOS_ID] = -math.inf
            mean = log_probs * weight if mean is None else mean + log_probs * weight
        assert mean is not None
        return mean


def differing_vocabulary(one: Any, other: Any) -> str | None:
    """How tokenizer ``other`` differs from ``one`` (its size, or the first
    id that spells another piece); None where they are the same."""
    if one.to_dict() == other.to_dict():
        return None
    if len(one) != len(other):
        return f"{len(one)} tokens there, {len(other)} here"
    ids = range(len(one))
    for number, (mine, theirs) in enumerate(
        zip(one.id_pieces(ids), other.id_pieces(ids), strict=True)
    ):
        if mine != theirs:
            return f"token {number} is {mine!r} there, {theirs!r} here"
    return "the same tokens, split by other rules"


class EnsembleTranslator(Translator):
    """Translators of models that share their vocabularies, translating as
    one (``Ensemble``); the text side (tokenizers, configuration, decoding
    defaults, languages) is the first one's."""

    def __init__(
        self,
        members: Sequence[TextTranslator],
        weights: Sequence[float] | None = None,
        names: Sequence[str] | None = None,
    ):
        # Translator's own __init__ readies one trained model; the members
        # are ready already, so only the text side is taken from the first.
        names = (
            list(names)
            if names is not None
            else [f"model {number}" for number in range(1, len(members) + 1)]
        )
        if not members:
            raise RosettaError("an ensemble needs at least one model")
        for name, member in zip(names, members, strict=True):
            if not isinstance(member, Translator) or isinstance(
                member, EnsembleTranslator
            ):
                raise RosettaError(
                    f"{name}: {type(member).__name__} does not decode a token at a "
                    "time in Rosetta's engine; an ensemble takes Transformer and "
                    "recurrent models"
                )
        first = members[0]
        for name, member in zip(names[1:], members[1:], strict=True):
            for side in ("src", "tgt"):
                differs = differing_vocabulary(
                    getattr(first.tokenizers, side), getattr(member.tokenizers, side)
                )
                if differs:
                    which = "source" if side == "src" else "target"
                    raise RosettaError(
                        f"{name}: its {which} vocabulary is not {names[0]}'s "
                        f"({differs}); an ensemble's models share both"
                    )
            if member.device != first.device or member.precision != first.precision:
                raise RosettaError(f"{name}: loaded on another device or precision")
        self.members = tuple(members)
        self.model = Ensemble(
            [member.model for member in members],
            ensemble_weights(weights, len(members)),
        )
        self.decodes_in_workers = all(m.decodes_in_workers for m in members)
        self.tokenizers, self.config = first.tokenizers, first.config
        self.device, self.precision = first.device, first.precision
        self.source_language = first.source_language
        self.target_language = first.target_language
        self.corpus_languages = first.corpus_languages

    @property
    def weights(self) -> tuple[float, ...]:
        return self.model.weights

    @property
    def position_limit(self) -> int | None:
        """The shortest of the models' limits: every model reads the source."""
        limits = [m.position_limit for m in self.members if m.position_limit]
        return min(limits) if limits else None
