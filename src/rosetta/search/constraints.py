"""Constraints on one sentence's translation, in token ids: phrases it must
include, phrases it must exclude, and a prefix it must start with
(lexically constrained decoding), batched with a constraint per sentence.

- ``prefix``: at step ``t < len(prefix)`` every token but ``prefix[t]`` is
  ruled out, so the output starts with it (its tokens scored by the model);
  a prefix that ended with a space is followed by a new word. Its first
  ``free`` tokens are forced the way ``transformers`` forces a
  multilingual model's target-language token: scored 0, not by the model.
- ``exclude``: banned phrases as the controls ban them (every spelling,
  ``rosetta.search.bans``), for this sentence's hypotheses only.
- ``include``: a phrase stays a word: right after it, the tokens that would
  go on with its last word (``continuations``: "s" after "▁dog") are ruled
  out. Beam search with dynamic beam allocation. Each hypothesis
  counts the include tokens it has met: a phrase's tokens count as they are
  matched in order, and a phrase broken off falls back to the longest part
  of it that the output still ends with (a string-matching automaton per
  phrase, ``step_table``); its bank counts the phrases met and the one it
  is furthest into (``met``). ``<eos>`` is ruled out until every phrase is met.
  At each step a hypothesis is extended by its best tokens, as in plain beam
  search, and also by the next token of each phrase it has not met, so a
  phrase the model would not reach for still gets a candidate. Candidates
  that have met as many tokens form a bank; the ``k`` places of the beam go
  to the banks ``0..C`` (``C`` tokens to meet) in rounds, ``max(1, k / (C +
  1))`` places per bank per round, most met first, each bank's best first.
  A hypothesis ending at the length limit with a phrase unmet is incomplete:
  the result only where no complete one exists.

A sentence's output limit is raised, where it is shorter, to what its
prefix and phrases need (``least_lengths``). The tokens every prefix of a
batch has are fed to the model in one pass (``feed_prefix``), not one step
per token: the same scores and state as forcing them step by step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from rosetta.search.bans import Spellings


@dataclass(frozen=True)
class TokenConstraints:
    """One sentence's constraints, as target token ids."""

    include: tuple[tuple[int, ...], ...] = ()
    exclude: tuple[Spellings, ...] = ()
    prefix: tuple[int, ...] = ()
    # the vocabulary's tokens that continue a word (no space before them)
    continuations: frozenset[int] = frozenset()
    prefix_ends_word: bool = False  # the prefix ended with a space
    free: int = 0  # the prefix's first tokens that score 0 (a language token)

    @property
    def needed(self) -> int:
        """How many include tokens an output must meet."""
        return sum(map(len, self.include))

    def __bool__(self) -> bool:
        return bool(self.include or self.exclude or self.prefix)

    def met_by(self, tokens: Sequence[int]) -> bool:
        """Whether ``tokens`` (an output, without ``<bos>``/``<eos>``) starts
        with the prefix, holds every include phrase and spells no excluded
        one: checked directly, whatever the search did."""
        tokens = list(tokens)
        if tokens[: len(self.prefix)] != list(self.prefix):
            return False
        for phrase in self.include:
            size = len(phrase)
            if not any(
                tuple(tokens[i : i + size]) == phrase
                and (
                    i + size == len(tokens)
                    or tokens[i + size] not in self.continuations
                )
                for i in range(len(tokens))
            ):
                return False
        for phrase in self.exclude:
            longest = phrase.most_tokens
            if any(
                phrase.spells(tokens[i:j])
                for i in range(len(tokens))
                for j in range(i + 1, min(len(tokens), i + longest) + 1)
            ):
                return False
        return True


def step_table(phrase: Sequence[int], width: int) -> list[list[int]]:
    """``table[q][i]``: the tokens of ``phrase`` matched after an output that
    had matched ``q`` of them goes on with the token ``phrase[i]`` (the
    longest start of the phrase the output then ends with), for ``q, i <
    len(phrase)``, padded to ``width``."""
    size = len(phrase)
    fallback = [0] * size  # the longest proper start that is also an end
    for q in range(1, size):
        k = fallback[q - 1]
        while k and phrase[q] != phrase[k]:
            k = fallback[k - 1]
        fallback[q] = k + (phrase[q] == phrase[k])

    def after(q: int, token: int) -> int:
        while q and phrase[q] != token:
            q = fallback[q - 1]
        return q + (phrase[q] == token)

    table = [[0] * width for _ in range(width)]
    for q in range(size):
        for i in range(size):
            table[q][i] = after(q, phrase[i])
    return table


class BatchConstraints:
    """The constraints of a batch's sentences as tensors; rows of the search
    are mapped to their sentence by ``sentence`` (rows,)."""

    def __init__(
        self, sentences: Sequence[TokenConstraints], eos_id: int, device: torch.device
    ):
        self.sentences, self.eos_id = list(sentences), eos_id
        longest = max((len(c.prefix) for c in sentences), default=0)
        prefix = [[*c.prefix, *[-1] * (longest - len(c.prefix))] for c in sentences]
        self.prefix = torch.tensor(prefix, dtype=torch.long, device=device)
        self.prefix = self.prefix.view(len(sentences), longest)
        self.longest_prefix = longest
        self.prefix_length = torch.tensor(
            [len(c.prefix) for c in sentences], dtype=torch.long, device=device
        )
        self.free = torch.tensor(
            [c.free for c in sentences], dtype=torch.long, device=device
        )
        # each sentence's phrases in slots (n, S, W): a row works on its own
        slots = max((len(c.include) for c in sentences), default=0)
        width = max((len(p) for c in sentences for p in c.include), default=1)

        def padded(phrase: Sequence[int], right: bool = False) -> list[int]:
            pad = [-1] * (width - len(phrase))
            return [*pad, *phrase] if right else [*phrase, *pad]

        def per_slot(make, empty):  # a sentence's phrases, then empty slots
            return [
                [make(p) for p in c.include] + [empty] * (slots - len(c.include))
                for c in sentences
            ]

        def tensor(rows: list) -> torch.Tensor:
            return torch.tensor(rows, dtype=torch.long, device=device)

        blank = [-1] * width
        self.phrases = tensor(per_slot(padded, blank)).view(
            len(sentences), slots, width
        )
        self.right_aligned = tensor(
            per_slot(lambda p: padded(p, right=True), blank)
        ).view(len(sentences), slots, width)
        self.phrase_length = tensor(per_slot(len, 0)).view(len(sentences), slots)
        self.table = tensor(
            per_slot(lambda p: step_table(p, width), [[0] * width] * width)
        ).view(len(sentences), slots, width, width)
        self.owned = [(s, p) for s, c in enumerate(sentences) for p in c.include]
        self.needed = torch.tensor(
            [c.needed for c in sentences], dtype=torch.long, device=device
        )
        self.excluded = [(s, p) for s, c in enumerate(sentences) for p in c.exclude]
        # the vocabulary's, the same for each sentence that keeps its words
        kinds = {c.continuations for c in sentences if c.continuations}
        if len(kinds) > 1:
            raise ValueError("the sentences of a batch share one vocabulary")
        self.continuations = torch.tensor(
            sorted(next(iter(kinds), ())), dtype=torch.long
        )
        self.keeps_words = torch.tensor(
            [bool(c.continuations) for c in sentences], dtype=torch.bool, device=device
        )
        self.prefix_ends_word = torch.tensor(
            [c.prefix_ends_word for c in sentences], dtype=torch.bool, device=device
        )

    @property
    def includes(self) -> bool:
        """Whether any sentence has a phrase to include (beam search only)."""
        return bool(self.owned)

    def least_lengths(self) -> torch.Tensor:
        """(n,) the shortest output limit that leaves room for each sentence's
        prefix and include phrases, and ``<eos>``. A prefix of forced free
        tokens alone (a target-language token) asks for no room: the limit
        counts it, as ``generate()``'s ``max_new_tokens`` does, and a limit
        of 1 writes it and nothing more."""
        asked = (self.prefix_length > self.free) | (self.needed > 0)
        return self.prefix_length + self.needed + asked.long()

    def start(self, sentence: torch.Tensor) -> torch.Tensor:
        """(rows, S) the include tokens matched before the first step: none,
        in each of a sentence's S phrase slots."""
        return sentence.new_zeros((len(sentence), self.phrases.size(1)))

    def advance(
        self, matched: torch.Tensor, tokens: torch.Tensor, sentence: torch.Tensor
    ) -> torch.Tensor:
        """``matched`` (..., S) after each row (of ``sentence`` (...)) goes on
        with ``tokens`` (...); a phrase met stays met."""
        if not self.includes:
            return matched
        width = self.phrases.size(2)
        phrases, length = self.phrases[sentence], self.phrase_length[sentence]
        equal = phrases == tokens[..., None, None]  # (..., S, W)
        at = matched.clamp(max=width - 1)[..., None, None].expand(
            *matched.shape, 1, width
        )
        following = self.table[sentence].gather(-2, at).squeeze(-2)  # (..., S, W)
        after = torch.where(equal, following, 0).amax(-1)
        return torch.where(matched >= length, matched, after)

    def met(self, matched: torch.Tensor, sentence: torch.Tensor) -> torch.Tensor:
        """(...) each row's bank: the tokens of the phrases it has met, and of
        the one it is furthest into (a token that starts two phrases counts
        once, so going on with one of them never lowers the bank)."""
        length = self.phrase_length[sentence]
        done = matched >= length
        partial = matched.masked_fill(done, 0).amax(-1) if matched.size(-1) else 0
        return matched.masked_fill(~done, 0).sum(-1) + partial

    def all_met(self, matched: torch.Tensor, sentence: torch.Tensor) -> torch.Tensor:
        return (matched >= self.phrase_length[sentence]).all(-1)

    def next_tokens(
        self, matched: torch.Tensor, sentence: torch.Tensor
    ) -> torch.Tensor:
        """(rows, S) the next token of each phrase a row has not met, -1 for
        the phrases met and the empty slots."""
        width = self.phrases.size(2)
        following = self.phrases[sentence].gather(
            2, matched.clamp(max=width - 1).unsqueeze(2)
        )
        open_ = matched < self.phrase_length[sentence]
        return following.squeeze(2).masked_fill(~open_, -1)

    def rule_out(
        self,
        log_probs: torch.Tensor,
        prefixes: torch.Tensor,
        sentence: torch.Tensor,
        matched: torch.Tensor | None = None,
    ) -> None:
        """Set to -inf, in place, every next token of ``log_probs`` (rows, V)
        that breaks a constraint after ``prefixes`` (rows, t): off the
        prefix, completing an excluded phrase, ``<eos>`` with an include
        phrase unmet (``matched``, where includes are searched for)."""
        t = prefixes.size(1)
        forcing = sentence.new_zeros(0)
        if t < self.longest_prefix:  # past every prefix, no step looks (no sync)
            forcing = (t < self.prefix_length[sentence]).nonzero().squeeze(1)
        if forcing.numel():
            forced = self.prefix[sentence[forcing], t]
            kept = log_probs[forcing, forced]
            kept = kept.masked_fill(t < self.free[sentence[forcing]], 0.0)
            log_probs[forcing] = float("-inf")
            log_probs[forcing, forced] = kept
        for owner, phrase in self.excluded:
            rows = (sentence == owner).nonzero().squeeze(1)
            if rows.numel():
                part = log_probs[rows]
                phrase.rule_out(part, prefixes[rows])
                log_probs[rows] = part
        if matched is not None and self.includes:
            unmet = ~self.all_met(matched, sentence)
            log_probs[unmet, self.eos_id] = float("-inf")
        if len(self.continuations):  # a phrase just met, or a prefix that
            ended = torch.zeros_like(sentence, dtype=torch.bool)  # ended a word
            if self.includes:
                ended = self.ends_with_a_phrase(prefixes, sentence)
                ended &= self.keeps_words[sentence]
            ended |= self.prefix_ends_word[sentence] & (
                self.prefix_length[sentence] == t
            )
            rows = ended.nonzero().squeeze(1)
            if rows.numel():
                where = self.continuations.to(log_probs.device)
                log_probs[rows.unsqueeze(1), where.unsqueeze(0)] = float("-inf")

    def ends_with_a_phrase(
        self, prefixes: torch.Tensor, sentence: torch.Tensor
    ) -> torch.Tensor:
        """(rows,) whether each row's output ends with one of its sentence's
        phrases to include."""
        t, width = prefixes.size(1), self.phrases.size(2)
        tail = prefixes[:, max(t - width, 0) :]
        tail = torch.nn.functional.pad(tail, (width - tail.size(1), 0), value=-2)
        phrases = self.right_aligned[sentence]  # (rows, S, W), -1 before each
        length = self.phrase_length[sentence]
        same = ((phrases == tail[:, None, :]) | (phrases == -1)).all(-1)
        return (same & (length > 0) & (length <= t)).any(-1)


def allocate(
    scores: torch.Tensor, banks: torch.Tensor, needed: torch.Tensor, width: int
) -> torch.Tensor:
    """(a, width) the candidates a beam keeps, in the order it ranks them:
    of ``scores`` (a, M) in ``banks`` (a, M) (include tokens met, of
    ``needed`` (a,)), ``max(1, width / (needed + 1))`` per bank per round,
    most met first, each bank's best first; -inf candidates last."""
    order = scores.argsort(dim=1, descending=True, stable=True)
    sorted_banks = banks.gather(1, order)
    top = int(sorted_banks.max()) + 1 if sorted_banks.numel() else 1
    member = torch.nn.functional.one_hot(sorted_banks, top)  # (a, M, top)
    rank_in_bank = (member.cumsum(1) * member).sum(-1) - 1
    quota = (width // (needed + 1)).clamp(min=1).unsqueeze(1)
    rounds = (rank_in_bank // quota).masked_fill(
        ~scores.gather(1, order).isfinite(), scores.size(1) + 1
    )
    key = rounds * (top + 1) + (top - sorted_banks)  # round, then most met
    return order.gather(1, key.argsort(dim=1, stable=True)[:, :width])
