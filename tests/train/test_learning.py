"""A broken model cannot pass this: learn to reverse random sequences."""

import time

import pytest
import torch

from rosetta.data import Example, collate
from rosetta.data.vocab import BOS_ID, EOS_ID, PAD_ID
from rosetta.families.rnn.model import build_rnn_seq2seq
from rosetta.search import greedy_search
from rosetta.train import label_smoothed_cross_entropy, learning_rate
from tests.support.fakes import CONFIG_LIMIT
from tests.support.transformers import transformer

VOCAB, SYMBOLS = 14, range(4, 14)


def reverse_examples(count, generator):
    lengths = torch.randint(3, 9, (count,), generator=generator)
    examples = []
    for n in lengths.tolist():
        seq = torch.randint(SYMBOLS.start, SYMBOLS.stop, (n,), generator=generator)
        examples.append(Example(seq.tolist(), seq.flip(0).tolist()))
    return examples


def exact_match(model, test):
    model.eval()
    batch = collate(test)
    hyps = greedy_search(
        model, batch.src, batch.src_mask, bos_id=BOS_ID, eos_id=EOS_ID, **CONFIG_LIMIT
    )
    return sum(h.tokens == e.tgt for h, e in zip(hyps, test, strict=True)) / len(test)


def train_to_reverse(model, peak_lr, clip_norm=None, decay="inverse_sqrt"):
    """Adam with warm-up on fresh random batches, checked every 100 steps, 55 s cap.

    Returns the exact-match rate on held-out sequences and the steps taken.
    """
    generator = torch.Generator().manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), betas=(0.9, 0.98))
    test = reverse_examples(300, torch.Generator().manual_seed(123))
    started = time.perf_counter()
    for step in range(1, 2001):
        batch = collate(reverse_examples(64, generator))
        model.train()
        features = model(
            batch.src, batch.src_mask, batch.tgt_in, batch.tgt_in != PAD_ID
        )
        logits = model.output_proj(features)
        loss, _, count = label_smoothed_cross_entropy(
            logits, batch.tgt_out, 0.0, PAD_ID
        )
        optimizer.zero_grad()
        (loss / count).backward()
        if clip_norm is not None:  # recurrent models train with gradient clipping
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, peak_lr, 100, decay)
        optimizer.step()
        if step % 100 == 0 and exact_match(model, test) >= 0.99:
            break
        if time.perf_counter() - started > 55:
            break
    return exact_match(model, test), step


@pytest.mark.slow
def test_transformer_learns_to_reverse_within_a_minute():
    torch.manual_seed(0)
    model = transformer(
        VOCAB,
        VOCAB,
        encoder_layers=2,
        decoder_layers=2,
        d_model=64,
        heads=4,
        d_ff=128,
        dropout=0.0,
        share_embeddings=True,
        max_positions=32,
    )
    exact, step = train_to_reverse(model, 4e-3)
    assert exact >= 0.99, f"exact match {exact:.3f} after {step} steps"


@pytest.mark.slow
def test_attention_rnn_learns_to_reverse_within_a_minute():
    torch.manual_seed(0)
    model = build_rnn_seq2seq(
        VOCAB,
        VOCAB,
        cell="gru",
        embedding_size=32,
        hidden_size=64,
        bidirectional=True,
        attention=True,
        dropout=0.0,
        share_embeddings=True,
    )
    exact, step = train_to_reverse(model, 3e-3, clip_norm=1.0)
    assert exact >= 0.99, f"exact match {exact:.3f} after {step} steps"
