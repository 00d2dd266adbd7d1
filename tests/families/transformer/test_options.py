"""The Transformer's options that MarianMT models need, each on its own:
the feed-forward activation, the sinusoids' layout, the logits bias, the
pieces-in-a-table tokenizer, the width permutation an export applies, and
the search's rule that ``<pad>`` and ``<bos>`` are never picked."""

from __future__ import annotations

import math

import pytest
import sentencepiece as spm
import torch
from benchmarks.marian_model import sentences, train_spm

from rosetta.data.piece_table import PieceTableTokenizer
from rosetta.data.tokenizer import TokenizerPair
from rosetta.data.vocab import BOS_ID, PAD_ID, SPECIALS
from rosetta.families.transformer.build import build_transformer
from rosetta.families.transformer.fast.packed import pack_for_inference
from rosetta.families.transformer.marian.exporter import halves_order, permuted_width
from rosetta.nn.feedforward import PositionwiseFeedForward
from rosetta.nn.positional import positional_encoding
from rosetta.search.controls import next_token_log_probs

SIZES = {"encoder_layers": 2, "decoder_layers": 2, "d_model": 16, "heads": 2}


@pytest.mark.reference
@pytest.mark.parametrize(
    ("name", "reference"),
    [
        ("relu", torch.relu),
        ("gelu", lambda x: 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))),
        ("swish", lambda x: x * torch.sigmoid(x)),
    ],
)
def test_each_activation_is_its_formula(name, reference):
    torch.manual_seed(0)
    ffn = PositionwiseFeedForward(8, 16, activation=name).eval()
    x = torch.randn(3, 5, 8)
    expected = ffn.linear2(reference(ffn.linear1(x)))
    torch.testing.assert_close(ffn(x), expected)


def test_an_unknown_activation_is_refused():
    with pytest.raises(ValueError, match="activation 'tanh': use one of"):
        PositionwiseFeedForward(8, 16, activation="tanh")


@pytest.mark.reference
def test_halves_hold_the_same_sinusoids_in_another_order():
    interleaved = positional_encoding(50, 12)
    halves = positional_encoding(50, 12, "halves")
    torch.testing.assert_close(halves, interleaved[:, halves_order(12)])
    position, i = 7, 2  # sin(7 / 10000^(4/12)) first, its cosine at 6 + 2
    assert halves[position, i].item() == pytest.approx(
        math.sin(position / 10000 ** (2 * i / 12)), abs=1e-6
    )
    assert halves[position, 6 + i].item() == pytest.approx(
        math.cos(position / 10000 ** (2 * i / 12)), abs=1e-6
    )


def model(**options) -> torch.nn.Module:
    torch.manual_seed(0)
    return build_transformer(40, 40, share_embeddings=True, **SIZES, **options).eval()


def logits(network, src, tgt) -> torch.Tensor:
    mask = torch.ones_like(src, dtype=torch.bool)
    with torch.no_grad():
        return network.output_proj(network(src, mask, tgt))


def test_the_logits_bias_is_added_to_every_logit():
    plain, biased = model(), model(output_bias=True)
    assert torch.count_nonzero(biased.output_proj.bias) == 0  # starts at zero
    biased.load_state_dict(plain.state_dict(), strict=False)  # but the bias
    with torch.no_grad():
        biased.output_proj.bias.copy_(torch.linspace(-1, 1, 40))
    src, tgt = torch.randint(4, 40, (2, 6)), torch.randint(4, 40, (2, 5))
    torch.testing.assert_close(
        logits(biased, src, tgt), logits(plain, src, tgt) + torch.linspace(-1, 1, 40)
    )


@pytest.mark.reference
@pytest.mark.parametrize("activation", ["gelu", "swish"])
def test_the_packed_step_follows_the_options(activation):
    """The decoding fast path is tested equal to the layers with each option."""
    network = model(activation=activation, sinusoids="halves", output_bias=True)
    with torch.no_grad():
        network.output_proj.bias.normal_()
    packed = pack_for_inference(network)
    src = torch.randint(4, 40, (3, 7))
    mask = torch.ones_like(src, dtype=torch.bool)
    prev = torch.full((3,), BOS_ID)
    with torch.no_grad():
        states = [m.init_state(m.encode(src, mask), mask) for m in (network, packed)]
        for _ in range(4):
            (a, states[0]), (b, states[1]) = (
                network.step(prev, states[0]),
                packed.step(prev, states[1]),
            )
            torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
            prev = a.argmax(-1)


@pytest.mark.reference
def test_permuting_the_width_keeps_the_function():
    """What an export does to a model trained with interleaved sinusoids:
    the permuted weights in a model with halves compute the same logits."""
    interleaved = model(activation="gelu", output_bias=True)
    halves = model(activation="gelu", output_bias=True, sinusoids="halves")
    state = permuted_width(interleaved.state_dict(), halves_order(16))
    halves.load_state_dict(state)  # every name (the tied ones permuted alike)
    src, tgt = torch.randint(4, 40, (2, 6)), torch.randint(4, 40, (2, 5))
    torch.testing.assert_close(
        logits(halves, src, tgt), logits(interleaved, src, tgt), atol=1e-5, rtol=0
    )


def test_search_never_picks_pad_or_bos():
    network = model(output_bias=True)
    with torch.no_grad():
        network.output_proj.bias[[PAD_ID, BOS_ID]] = 100.0  # the likeliest
    src = torch.randint(4, 40, (2, 5))
    mask = torch.ones_like(src, dtype=torch.bool)
    with torch.no_grad():
        state = network.init_state(network.encode(src, mask), mask)
        nothing_yet = torch.zeros((2, 0), dtype=torch.long)
        prev = torch.full((2,), BOS_ID)
        log_probs, _ = next_token_log_probs(network, prev, state, nothing_yet)
    assert torch.isneginf(log_probs[:, [PAD_ID, BOS_ID]]).all()
    others = log_probs[:, [i for i in range(40) if i not in (PAD_ID, BOS_ID)]]
    assert others.exp().sum(-1).max() < 1e-6  # normalised over all, then banned


@pytest.fixture(scope="module")
def piece_table() -> PieceTableTokenizer:
    model_bytes = train_spm(sentences("en", 500), 200)
    processor = spm.SentencePieceProcessor(model_proto=model_bytes)
    pieces = [processor.id_to_piece(i) for i in range(3, processor.get_piece_size())]
    tokens = [*SPECIALS, ">>fra<<", ">>spa<<", *reversed(pieces)]  # not spm's order
    return PieceTableTokenizer(model_bytes, tokens)


def test_pieces_are_looked_up_in_the_table(piece_table):
    text = "A man is riding a bike."
    ids = piece_table.encode(text)
    pieces = piece_table.processor.encode(text, out_type=str)
    assert piece_table.id_pieces(ids) == pieces
    assert ids != piece_table.processor.encode(text)  # the table's ids, not spm's
    assert piece_table.decode(ids) == text
    assert piece_table.language_codes == ["fra", "spa"]
    tagged = piece_table.encode(f">>spa<< {text}")
    assert tagged == [len(SPECIALS) + 1, *ids]
    assert piece_table.encode("\u2603\u2603") == [1, 1] or 1 in piece_table.encode(
        "\u2603"
    )  # a piece outside the table is <unk>


def test_a_piece_table_survives_its_record(piece_table):
    pair = TokenizerPair(piece_table, piece_table)
    again = TokenizerPair.from_dict(pair.to_dict())
    text = "Two dogs play in the snow."
    assert again.src.encode(text) == piece_table.encode(text)
    assert again.tgt.decode(piece_table.encode(text)) == text
