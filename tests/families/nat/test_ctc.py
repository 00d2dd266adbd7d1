"""CTC length modelling for the NAT, checked against brute force over every
alignment and against its rules by hand."""

import itertools
import math

import numpy as np
import pytest
import torch
from pydantic import ValidationError

from rosetta.data.batching import Example
from rosetta.data.encoded_pairs import EncodedPairs
from rosetta.data.vocab import PAD_ID
from rosetta.families.nat.config import NATConfig
from rosetta.families.nat.ctc import (
    BLANK_ID,
    best_alignment,
    collapse,
    ctc_fits,
    ctc_negative_log_likelihood,
)
from rosetta.families.nat.model import Glance
from rosetta.families.nat.search import ctc_candidates
from tests.families.nat.test_model import tiny_nat

B = BLANK_ID


def test_collapse_merges_runs_then_drops_blanks():
    assert collapse([5, 5, B, 6, 6, B, 6]) == [5, 6, 6]
    assert collapse([B, B, B]) == []
    assert collapse([7, B, 7, 7, 8]) == [7, 7, 8]
    assert collapse([]) == []


def alignments(target, steps, symbols):
    """Every sequence of ``steps`` symbols that collapses to ``target``."""
    return [
        a
        for a in itertools.product(symbols, repeat=steps)
        if collapse(list(a)) == target
    ]


def random_log_probs(n, steps, vocabulary, seed):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(n, steps, vocabulary, generator=generator).log_softmax(-1)


CASES = [  # (target, real positions): repeats need a blank between copies
    ([4], 3),
    ([4, 5], 4),
    ([5, 5], 3),
    ([4, 5, 4], 5),
    ([], 2),
]


@pytest.mark.reference
def test_the_ctc_loss_is_minus_the_log_of_the_sum_over_every_alignment():
    symbols = [B, 4, 5]
    steps = max(real for _, real in CASES)
    log_probs = random_log_probs(len(CASES), steps, 6, seed=0)
    mask = torch.tensor([[t < real for t in range(steps)] for _, real in CASES])
    width = max(len(target) for target, _ in CASES)
    targets = torch.tensor(
        [target + [PAD_ID] * (width - len(target)) for target, _ in CASES]
    )
    expected = 0.0
    for row, (target, real) in enumerate(CASES):
        paths = alignments(target, real, symbols)
        assert paths  # every case fits
        total = sum(
            math.exp(sum(log_probs[row, t, s].item() for t, s in enumerate(path)))
            for path in paths
        )
        expected -= math.log(total)
    found = ctc_negative_log_likelihood(log_probs, mask, targets)
    assert found.item() == pytest.approx(expected, rel=1e-5)


@pytest.mark.reference
def test_the_best_alignment_is_the_most_likely_of_every_alignment():
    symbols = [B, 4, 5]
    steps = 6
    for seed in range(5):
        log_probs = random_log_probs(len(CASES), steps, 6, seed=seed)
        mask = torch.tensor([[t < real + 1 for t in range(steps)] for _, real in CASES])
        width = max(len(target) for target, _ in CASES)
        targets = torch.tensor(
            [target + [PAD_ID] * (width - len(target)) for target, _ in CASES]
        )
        found = best_alignment(log_probs, mask, targets)
        for row, (target, real) in enumerate(CASES):
            real += 1
            paths = alignments(target, real, symbols)
            best = max(
                paths,
                key=lambda p, row=row: sum(
                    log_probs[row, t, s].item() for t, s in enumerate(p)
                ),
            )
            assert found[row, :real].tolist() == list(best), (seed, target)
            assert found[row, real:].eq(PAD_ID).all()
            assert collapse(found[row, :real].tolist()) == target


def test_a_pair_fits_ctc_when_its_positions_hold_its_tokens_and_repeats():
    pairs = EncodedPairs.from_examples(
        [
            Example([1], [5, 6]),  # 2 positions (source and <eos>) hold 2 tokens
            Example([1], [5, 5]),  # a repeat needs a blank between: 3
            Example([1, 2], [5, 5, 6]),  # 3 positions, 3 + 1 needed
            Example([1, 2], [5, 6, 5]),  # no adjacent repeat: fits
        ]
    )
    assert ctc_fits(pairs, 1).tolist() == [True, False, False, True]
    assert ctc_fits(pairs, 2).tolist() == [True, True, True, True]
    subset = pairs.subset(np.array([False, True, True, False]))
    assert ctc_fits(subset, 1).tolist() == [False, False]


def test_a_revealed_position_reads_its_reference_token_and_nothing_else_changes():
    model = tiny_nat(length_model="ctc", upsample=2)
    src = torch.tensor([[5, 6, 3]])
    src_mask = src > 0
    with torch.no_grad():
        memory, fertility_logits = model.encode(src, src_mask)
        plain, mask, _ = model.decode(src, src_mask, memory, None)
        nothing = Glance(torch.zeros(1, 6, dtype=torch.bool), torch.zeros(1, 6).long())
        same, _, _ = model.decode(src, src_mask, memory, None, glance=nothing)
        tokens = torch.tensor([[0, 9, 0, 0, 0, 0]])
        revealed = Glance(tokens > 0, tokens)
        x, _ = model.copy_source(
            model.encoder.embedding.token(src) * model.encoder.embedding.scale,
            src_mask,
            None,
        )
    assert fertility_logits is None and mask.tolist() == [[True] * 6]
    assert torch.equal(plain, same)
    # the decoder input at position 1 is the target embedding of 9
    assert torch.equal(x[0, 0], x[0, 1])  # upsampled: two copies of each token
    with torch.no_grad():
        glanced, _, _ = model.decode(src, src_mask, memory, None, glance=revealed)
    assert not torch.allclose(glanced, plain)


def test_ctc_options_are_checked_and_the_glancing_ratio_anneals():
    base = dict(arch="nat", d_model=16, heads=2)
    with pytest.raises(ValidationError, match="remove it"):
        NATConfig(**base, length_model="ctc", decoder_input="uniform")
    with pytest.raises(ValidationError, match="glance_ratio above 0"):
        NATConfig(**base, glance_ratio_end=0.3)
    config = NATConfig(
        **base, glance_ratio=0.5, glance_ratio_end=0.3, glance_anneal_updates=100
    )
    assert [config.glance_ratio_at(u) for u in (0, 50, 100, 500)] == pytest.approx(
        [0.5, 0.4, 0.3, 0.3]
    )
    ctc = NATConfig(**base, length_model="ctc", upsample=3, max_positions=100)
    assert ctc.position_limit == 33


def test_ctc_decoding_collapses_each_positions_best_symbol():
    model = tiny_nat(length_model="ctc", upsample=3)
    src = torch.tensor([[5, 6, 7, 3], [8, 3, 0, 0]])
    src_mask = src > 0
    found = ctc_candidates(model, src, src_mask, need_attention=True)
    with torch.no_grad():
        memory, _ = model.encode(src, src_mask)
        features, _, _ = model.decode(src, src_mask, memory, None)
        log_probs = model.output_proj(features).log_softmax(-1)
    for row, real in enumerate([12, 6]):
        best, symbols = log_probs[row, :real].max(-1)
        (candidate,) = found[row]
        assert candidate.tokens == collapse(symbols.tolist())
        assert candidate.score == pytest.approx(best.sum().item(), abs=1e-5)
        assert candidate.attention.shape[0] == len(candidate.tokens)
        assert candidate.fertilities is None
    short = ctc_candidates(model, src, src_mask, max_lengths=torch.tensor([1, 1]))
    assert all(len(c[0].tokens) <= 1 for c in short)


def copy_batch(generator, rows=32, length=4):
    words = torch.randint(4, 12, (rows, length), generator=generator)
    return torch.cat([words, torch.full((rows, 1), 3)], dim=1), words


def test_a_tiny_ctc_nat_learns_to_copy():
    """Two decoder positions per source token: the model must emit each token
    once and blanks (or repeats) elsewhere, and learn where by itself."""
    torch.manual_seed(0)
    model = tiny_nat(d_model=32, d_ff=64, length_model="ctc", upsample=2).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(1)
    for _ in range(300):
        src, words = copy_batch(generator)
        features, mask, _ = model(src, src > 0, None)
        log_probs = model.output_proj(features).log_softmax(-1)
        loss = ctc_negative_log_likelihood(log_probs, mask, words) / words.numel()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    src, words = copy_batch(generator)
    found = ctc_candidates(model, src, src > 0)
    exact = [c[0].tokens == w for c, w in zip(found, words.tolist(), strict=True)]
    assert sum(exact) / len(exact) >= 0.75  # 0.9-0.95 over four seeds
