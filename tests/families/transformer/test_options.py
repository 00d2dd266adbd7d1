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
from rosetta.families.transformer.fast.packed import pack_for_inference
from rosetta.families.transformer.hf.marian.exporter import halves_order, permuted_width
from rosetta.nn.feedforward import PositionwiseFeedForward
from rosetta.nn.positional import positional_encoding
from rosetta.search.controls import next_token_log_probs
from tests.support.transformers import transformer

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
    return transformer(40, 40, share_embeddings=True, **SIZES, **options).eval()


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
@pytest.mark.parametrize(
    "options",
    [
        {"activation": "gelu", "sinusoids": "halves"},
        {"activation": "swish", "sinusoids": "halves"},
        {"sinusoids": "fairseq", "first_position": 2, "norm_first": True},
        {"positions": "learned", "embedding_norm": True, "scale_embeddings": False},
    ],
    ids=["gelu", "swish", "m2m_100", "mbart"],
)
def test_the_packed_step_follows_the_options(options):
    """The decoding fast path is tested equal to the layers with each option."""
    network = model(**options, output_bias=True)
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


# The options fairseq's multilingual models need (M2M100 and NLLB; mBART),
# each checked against transformers' own model with the same weights.
PAD = 1  # fairseq's padding id, which these models' position numbers start after
TINY = {
    "vocab_size": 40,
    "d_model": 16,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 2,
    "decoder_attention_heads": 2,
    "encoder_ffn_dim": 32,
    "decoder_ffn_dim": 32,
    "max_position_embeddings": 64,
    "pad_token_id": PAD,
}


def fairseq_tensors(theirs: dict[str, torch.Tensor], learned: bool) -> dict:
    """Their shared-vocabulary model's tensors under Rosetta's names."""
    from rosetta.families.transformer.hf.convert import layer_names

    counts = {"encoder_layers": 2, "decoder_layers": 2}
    ours = {mine: theirs[name] for name, mine in layer_names(counts).items()}
    table = theirs["model.shared.weight"]
    ours |= {"encoder.embedding.token.weight": table, "output_proj.weight": table}
    ours["decoder.embedding.token.weight"] = table
    for side in ("encoder", "decoder"):
        for kind in ("weight", "bias"):
            ours[f"{side}.final_norm.{kind}"] = theirs[
                f"model.{side}.layer_norm.{kind}"
            ]
            if learned:  # mBART: its embeddings' LayerNorm
                norm = theirs[f"model.{side}.layernorm_embedding.{kind}"]
                ours[f"{side}.embedding.norm.{kind}"] = norm
        if learned:  # rows 0 and 1 are never read: positions count from 2
            positions = theirs[f"model.{side}.embed_positions.weight"][PAD + 1 :]
            ours[f"{side}.embedding.positions"] = positions
    if "final_logits_bias" in theirs:
        ours["output_proj.bias"] = theirs["final_logits_bias"].reshape(-1)
    return ours


def padded_pair() -> tuple[torch.Tensor, torch.Tensor]:
    """Sources and decoder inputs of three lengths, padded with ``PAD``."""
    generator = torch.Generator().manual_seed(3)
    src = torch.randint(4, 40, (3, 9), generator=generator)
    tgt = torch.randint(4, 40, (3, 7), generator=generator)
    src[1, 6:], src[2, 3:], tgt[1, 5:], tgt[2, 2:] = PAD, PAD, PAD, PAD
    tgt[:, 0] = 2  # their decoder starts from </s>
    return src, tgt


@pytest.mark.reference
@pytest.mark.parametrize("architecture", ["m2m_100", "mbart"])
def test_fairseq_options_compute_what_transformers_computes(architecture):
    """Pre-norm layers with a final LayerNorm per stack, fairseq's sinusoids
    counted from 2 and scaled embeddings (M2M100, NLLB); learned positions,
    a LayerNorm on the embeddings, unscaled embeddings, gelu and a logits
    bias (mBART): the logits of a padded batch equal transformers'."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    mbart = architecture == "mbart"
    if mbart:
        config = transformers.MBartConfig(**TINY, scale_embedding=False)
        theirs = transformers.MBartForConditionalGeneration(config).eval()
        with torch.no_grad():  # not zeros, so the test sees the bias added
            theirs.final_logits_bias.normal_()
    else:
        config = transformers.M2M100Config(**TINY)
        theirs = transformers.M2M100ForConditionalGeneration(config).eval()
    ours = transformer(
        40,
        40,
        **{**SIZES, "d_ff": 32},
        norm_first=True,
        share_embeddings=True,
        max_positions=64,
        activation="gelu" if mbart else "relu",
        positions="learned" if mbart else "sinusoidal",
        sinusoids="fairseq",
        first_position=PAD + 1,
        scale_embeddings=not mbart,
        embedding_norm=mbart,
        output_bias=mbart,
    ).eval()
    ours.load_state_dict(fairseq_tensors(theirs.state_dict(), mbart), strict=True)
    src, tgt = padded_pair()
    with torch.no_grad():
        expected = theirs(
            input_ids=src, attention_mask=src != PAD, decoder_input_ids=tgt
        ).logits
        got = ours.output_proj(ours(src, src != PAD, tgt))
    real = tgt != PAD
    assert (got[real] - expected[real]).abs().max() <= 1e-4


@pytest.mark.reference
def test_fairseq_sinusoids_are_their_formula():
    table = positional_encoding(10, 12, "fairseq", start=2)
    position, i, half = 5, 3, 6  # row 3 is position 5; frequency 10000^(-3/5)
    angle = position * 10000 ** (-i / (half - 1))
    assert table[3, i].item() == pytest.approx(math.sin(angle), abs=1e-6)
    assert table[3, half + i].item() == pytest.approx(math.cos(angle), abs=1e-6)
    odd = positional_encoding(4, 13, "fairseq")
    assert odd.shape == (4, 13) and bool((odd[:, -1] == 0).all())
    with pytest.raises(ValueError, match="d_model of at least 4"):
        positional_encoding(4, 3, "fairseq")


def test_learned_positions_and_the_embedding_norm_are_each_side_s_own():
    model = transformer(
        30,
        30,
        **SIZES,
        share_embeddings=True,
        positions="learned",
        embedding_norm=True,
    )
    encoder, decoder = model.encoder.embedding, model.decoder.embedding
    assert encoder.token is decoder.token  # the tokens shared, nothing else
    assert encoder.positions is not decoder.positions
    assert encoder.norm is not decoder.norm
    names = dict(model.named_parameters())
    assert "encoder.embedding.positions" in names
    assert "decoder.embedding.norm.weight" in names
    src = torch.randint(4, 30, (2, 5))
    loss = model.output_proj(model(src, src != PAD_ID, src)).sum()
    loss.backward()
    assert encoder.positions.grad is not None and decoder.positions.grad is not None


def test_unscaled_embeddings_add_the_token_vectors_as_they_are():
    scaled = transformer(30, 30, **SIZES, dropout=0.0).eval()
    plain = transformer(30, 30, **SIZES, dropout=0.0, scale_embeddings=False)
    plain.load_state_dict(scaled.state_dict())
    tokens = torch.randint(4, 30, (2, 5))
    positions = scaled.encoder.embedding.positions[:5]
    token = scaled.encoder.embedding.token(tokens)
    with torch.no_grad():
        torch.testing.assert_close(
            scaled.encoder.embedding(tokens), token * math.sqrt(16) + positions
        )
        torch.testing.assert_close(
            plain.eval().encoder.embedding(tokens), token + positions
        )


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ({"sinusoids": "fairseq"}, "fairseq's sinusoids"),
        ({"first_position": 2}, "counted from 2"),
        ({"embedding_norm": True}, "LayerNorm on the embeddings"),
        ({"scale_embeddings": False}, "unscaled embeddings"),
        ({"positions": "learned"}, "learned positions"),
    ],
)
def test_exports_refuse_what_their_format_cannot_hold(option, said, tmp_path):
    """MarianMT has none of these options; the CTranslate2 export writes
    scaled, unnormalised embeddings and sinusoid tables (fairseq's, counted
    from any start, are a table like any other)."""
    from types import SimpleNamespace

    from rosetta.errors import RosettaError
    from rosetta.families.transformer.config import TransformerConfig
    from rosetta.families.transformer.ctranslate2.export import write_export
    from rosetta.families.transformer.hf.marian.exporter import refusal

    section = TransformerConfig(share_embeddings=True, **option)
    assert said in refusal(section)
    pytest.importorskip("ctranslate2")
    restored = SimpleNamespace(folder=tmp_path, config=SimpleNamespace(model=section))
    if "sinusoids" in option or "first_position" in option:
        return  # a table CTranslate2 takes as it is
    with pytest.raises(RosettaError, match=r"learned|scaled by sqrt"):
        write_export(restored, tmp_path / "out", None)
