"""A position scheme added from outside Rosetta's source
(``tests/position_scheme``): one module and one line in the list of
schemes, and the configuration takes it, the family builds it, and it
trains and decodes."""

from __future__ import annotations

import importlib

import pytest
import torch

from rosetta.families.transformer import positions
from rosetta.families.transformer.build import build
from rosetta.families.transformer.config import TransformerConfig
from rosetta.families.transformer.fast.packed import pack_for_inference
from rosetta.train import label_smoothed_cross_entropy
from tests.families.transformer.test_model import random_batch

SIZES = dict(
    encoder_layers=1,
    decoder_layers=1,
    d_model=32,
    heads=4,
    d_ff=64,
    dropout=0.0,
    max_positions=32,
    share_embeddings=False,
)


@pytest.fixture
def strided(monkeypatch):
    """The scheme listed for one test, as its one line lists it."""
    monkeypatch.setitem(positions.SCHEMES, "strided", None)
    importlib.reload(importlib.import_module("tests.position_scheme.listed"))
    return TransformerConfig(positions="strided", **SIZES)


def test_a_scheme_from_outside_trains_and_decodes_as_it_teacher_forces(strided):
    torch.manual_seed(0)
    model = build(strided, 11, 13)
    src, src_mask, tgt = random_batch()
    labels = torch.roll(tgt, -1, dims=1)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(8):
        loss = label_smoothed_cross_entropy(model(src, src_mask, tgt), labels, 0.0, 0)
        optimizer.zero_grad()
        loss[0].backward()
        optimizer.step()
        losses.append(loss[0].item())
    assert losses[-1] < losses[0]
    model.eval()
    assert pack_for_inference(model) is model  # its steps are not at their count
    with torch.no_grad():
        full = torch.log_softmax(model.output_proj(model(src, src_mask, tgt)), -1)
        state = model.init_state(model.encode(src, src_mask), src_mask)
        for t in range(tgt.size(1)):
            log_probs, state = model.step(tgt[:, t], state)
            assert (log_probs - full[:, t]).abs().max() <= 1e-5
        # the positions it gives are those used: 0, 2, 4, ..., not 0, 1, 2, ...
        counted = 2 * torch.arange(src.size(1)).expand_as(src)
        assert torch.equal(
            model.encoder(src, src_mask), model.encoder(src, src_mask, counted)
        )
        assert not torch.equal(
            model.encoder(src, src_mask),
            model.encoder(src, src_mask, torch.arange(src.size(1)).expand_as(src)),
        )


def test_an_unlisted_scheme_is_a_clear_error():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="positions 'strided': use one of"):
        TransformerConfig(positions="strided", **SIZES)
