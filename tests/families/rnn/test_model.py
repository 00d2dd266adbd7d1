"""Recurrent encoder-decoders: decoding equals teacher forcing, padding is inert,
additive attention follows its formula, and the configs build and train."""

import json

import pytest
import torch
from pydantic import ValidationError

from rosetta.errors import RosettaError
from rosetta.families import build_model
from rosetta.families.rnn.config import RNNConfig
from rosetta.families.rnn.model import Bridge, build_rnn_seq2seq
from rosetta.families.transformer.config import TransformerConfig
from rosetta.jobs.loading import load_translator
from rosetta.jobs.training import run_training
from rosetta.nn import AdditiveAttention
from tests.support.toy import RNN_ATTENTION, toy_config
from tests.train.test_trainer import latest, weights

VOCAB = 23
MODELS = {
    "gru": dict(cell="gru"),
    "lstm-2-layers": dict(cell="lstm", encoder_layers=2, decoder_layers=2),
    "rnn-tanh": dict(cell="rnn"),
    "gru-attention": dict(cell="gru", bidirectional=True, attention=True),
    "lstm-bi-attention": dict(cell="lstm", bidirectional=True, attention=True),
    "gru-cho-reference": dict(
        cell="gru", attention=True, impl="reference", gru_variant="cho"
    ),
    "lstm-deep-bi-to-shallow": dict(
        cell="lstm", encoder_layers=3, decoder_layers=2, bidirectional=True
    ),
}


def tiny(name, **extra):
    torch.manual_seed(0)
    options = dict(embedding_size=8, hidden_size=10, dropout=0.0) | MODELS[name]
    return build_rnn_seq2seq(VOCAB, VOCAB, **(options | extra)).eval()


def source_batch():
    generator = torch.Generator().manual_seed(3)
    src = torch.randint(4, VOCAB, (3, 7), generator=generator)
    mask = torch.arange(7)[None, :] < torch.tensor([7, 4, 2])[:, None]
    return src.masked_fill(~mask, 0), mask


@pytest.mark.parametrize("name", MODELS)
def test_step_by_step_equals_teacher_forcing(name):
    model = tiny(name)
    src, mask = source_batch()
    tgt = torch.randint(4, VOCAB, (3, 6), generator=torch.Generator().manual_seed(4))
    logits = model.output_proj(model(src, mask, tgt))  # (n, T, V)
    forced = torch.log_softmax(logits, dim=-1)
    state = model.init_state(model.encode(src, mask), mask)
    for t in range(tgt.size(1)):
        log_probs, state = model.step(tgt[:, t], state)
        torch.testing.assert_close(log_probs, forced[:, t], atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", MODELS)
def test_batched_equals_alone_and_reorder_selects_rows(name):
    model = tiny(name)
    src, mask = source_batch()
    tgt = torch.randint(4, VOCAB, (3, 4), generator=torch.Generator().manual_seed(5))
    batched = model(src, mask, tgt)
    for i in range(3):
        length = int(mask[i].sum())
        alone = model(src[i : i + 1, :length], mask[i : i + 1, :length], tgt[i : i + 1])
        torch.testing.assert_close(alone[0], batched[i], atol=1e-5, rtol=0)
    index = torch.tensor([2, 2, 0])
    state = model.init_state(model.encode(src, mask), mask).reorder(index)
    picked = model.init_state(model.encode(src[index], mask[index]), mask[index])
    a, _ = model.step(tgt[index, 0], state)
    b, _ = model.step(tgt[index, 0], picked)
    torch.testing.assert_close(a, b, atol=1e-6, rtol=0)


@pytest.mark.reference
def test_additive_attention_follows_its_formula_in_float64():
    torch.manual_seed(0)
    attention = AdditiveAttention(3, 4, 5).double()
    query = torch.randn(2, 3, dtype=torch.float64)
    keys = torch.randn(2, 6, 4, dtype=torch.float64)
    mask = torch.tensor([[True] * 6, [True] * 3 + [False] * 3])
    context, weights_ = attention(query, attention.project_keys(keys), keys, mask)
    W, U = attention.query_proj.weight, attention.key_proj.weight
    v = attention.score.weight[0]
    for i in range(2):
        real = int(mask[i].sum())
        energies = torch.stack(
            [v @ torch.tanh(W @ query[i] + U @ keys[i, j]) for j in range(real)]
        )  # e_ij = v^T tanh(W s + U h_j)
        alpha = torch.softmax(energies, dim=0)
        torch.testing.assert_close(weights_[i, :real], alpha)
        assert not weights_[i, real:].any()  # padding gets no weight
        torch.testing.assert_close(context[i], alpha @ keys[i, :real])


def test_bridge_maps_bidirectional_deep_states_to_the_decoder():
    bridge = Bridge(3, 2, 10, 2, 12, lstm=True)
    h, c = torch.randn(6, 4, 10), torch.randn(6, 4, 10)
    h_out, c_out = bridge((h, c))
    assert h_out.shape == c_out.shape == (2, 4, 12)
    # the top encoder layer (both directions) feeds every decoder layer
    top = torch.cat([h[4], h[5]], dim=-1)
    assert bridge.hidden_proj is not None
    torch.testing.assert_close(h_out[1], torch.tanh(bridge.hidden_proj(top)))
    same = Bridge(2, 1, 10, 2, 10, lstm=False)
    assert same.hidden_proj is None and torch.equal(same(h[:2]), h[:2])


def test_config_selects_the_model_and_rejects_what_it_would_ignore():
    config = RNNConfig(
        arch="rnn", cell="lstm", hidden_size=16, d_model=8, attention="bahdanau"
    )
    model = build_model(config, VOCAB, VOCAB)
    assert model.decoder.attention is not None
    assert model.encoder.rnn.cell == "lstm"
    with pytest.raises(ValidationError, match=r"heads\n.*Extra inputs"):
        RNNConfig(arch="rnn", heads=8)
    with pytest.raises(ValidationError, match=r"cell\n.*Extra inputs"):
        TransformerConfig(cell="lstm")
    with pytest.raises(ValueError, match="fused kernels compute the torch form"):
        RNNConfig(arch="rnn", gru_variant="cho")
    RNNConfig(arch="rnn", gru_variant="cho", rnn_impl="reference")


def test_rnn_model_trains_resumes_exactly_and_translates(tmp_path):
    steps = ("train.max_epochs=null", "train.max_steps=30")
    config, _ = toy_config(tmp_path, *steps, model=RNN_ATTENTION)
    run_training(config, tmp_path / "straight")
    half, _ = toy_config(
        tmp_path, "train.max_epochs=null", "train.max_steps=17", model=RNN_ATTENTION
    )
    run_training(half, tmp_path / "resumed")
    run_training(config, tmp_path / "resumed", resume=True)
    (a, _), (b, _) = latest(tmp_path / "straight"), latest(tmp_path / "resumed")
    wa, wb = weights(a), weights(b)
    assert wa.keys() == wb.keys()
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    meta = json.loads((a / "checkpoint.json").read_text())
    assert meta["config"]["model"]["arch"] == "rnn"

    translator = load_translator(tmp_path / "straight")
    lines = ["alpha beta", "", "gamma delta eps"]
    assert len(translator.translate(lines)) == 3


def test_unknown_rnn_key_in_yaml_is_a_clear_error(tmp_path):
    with pytest.raises(RosettaError, match=r"model\.cells: unknown key"):
        toy_config(tmp_path, model="{arch: rnn, cells: gru}")
