"""Positions inside numbers (abacus, coupled): the rule by hand, one training
offset per pair on both sides, and a run that trains, reloads and decodes
with them. Decoding step by step as teacher forcing is checked for every
scheme in ``test_model``."""

import json

import pytest
import torch

from rosetta.families.transformer.fast.packed import can_pack
from rosetta.families.transformer.positions.numbers import (
    digit_mask,
    number_positions,
    shifted,
)
from tests.families.transformer.test_model import tiny_model
from tests.support.transformers import transformer

# "4 7 + 8 5 <eos>" and "1 2 3 <eos> <pad>"
DIGITS = torch.tensor([[1, 1, 0, 1, 1, 0], [1, 1, 1, 0, 0, 0]], dtype=torch.bool)


def test_abacus_counts_each_number_from_its_first_digit():
    assert number_positions(DIGITS).tolist() == [[1, 2, 0, 1, 2, 0], [1, 2, 3, 0, 0, 0]]


def test_coupled_counts_each_number_from_its_last_digit():
    assert number_positions(DIGITS, from_end=True).tolist() == [
        [2, 1, 0, 2, 1, 0],
        [3, 2, 1, 0, 0, 0],
    ]


def test_a_decoded_digit_continues_the_number_before_it():
    start = torch.tensor([2, 0])  # the last token: a second digit, a non-digit
    found = number_positions(DIGITS[:, :2], start)
    assert found.tolist() == [[3, 4], [1, 2]]
    assert shifted(number_positions(DIGITS), torch.tensor([[10], [0]])).tolist() == [
        [11, 12, 0, 11, 12, 0],
        [1, 2, 3, 0, 0, 0],
    ]


def test_the_digits_are_the_vocabularys_single_digit_tokens():
    pieces = ["<pad>", "<unk>", "<s>", "</s>", "7", "+", "12", "0", "#3"]
    assert digit_mask(pieces).tolist() == [0, 0, 0, 0, 1, 0, 0, 1, 0]


def abacus_model(positions="abacus", number_offset=5, number_table="sinusoidal"):
    """The small Transformer of ``test_model``: tokens 4-8 are digits."""
    return tiny_model(
        positions=positions, number_offset=number_offset, number_table=number_table
    )


@pytest.mark.parametrize("positions", ["abacus", "coupled"])
def test_training_moves_both_sides_digits_by_one_offset_per_pair(positions):
    model = abacus_model(positions).train()
    seen = {}

    def spy(name, embedding):
        original = embedding.forward

        def forward(tokens, offset=0, positions=None):
            seen[name] = positions
            return original(tokens, offset, positions)

        embedding.forward = forward

    spy("source", model.encoder.embedding)
    spy("target", model.decoder.embedding)
    src = torch.tensor([[4, 5, 10, 6, 7, 3]] * 64)
    tgt = torch.tensor([[2, 4, 5, 6]] * 64)
    model(src, src != 0, tgt)
    plain_source = model.encoder.positions.numbers(src)
    plain_target = model.decoder.positions.numbers(tgt)
    offsets = seen["source"][:, 0] - plain_source[:, 0]
    assert set(offsets.tolist()) == set(range(6))  # 0 .. number_offset
    assert torch.equal(seen["source"], shifted(plain_source, offsets[:, None]))
    assert torch.equal(seen["target"], shifted(plain_target, offsets[:, None]))
    assert seen["source"][:, 2].eq(0).all() and seen["target"][:, 0].eq(0).all()
    model.eval()
    model(src, src != 0, tgt)
    assert torch.equal(seen["source"], plain_source)  # no offset outside training
    assert torch.equal(seen["target"], plain_target)


def test_number_positions_decode_through_the_layers_and_need_the_digits():
    assert not can_pack(abacus_model())
    with pytest.raises(ValueError, match="need the vocabularies' digits"):
        transformer(12, 12, d_model=16, heads=2, positions="abacus")
    model = abacus_model(number_offset=100).train()  # past the table of 64
    number = torch.tensor([[4] * 10 + [3]] * 64)
    with pytest.raises(ValueError, match=r"raise model\.max_positions"):
        model(number, number != 0, number)


@pytest.mark.reference
@pytest.mark.parametrize("positions", ["abacus", "coupled"])
def test_learned_places_are_one_trained_table_and_decode_as_they_teacher_force(
    positions,
):
    from tests.families.transformer.test_model import random_batch

    model = abacus_model(positions, number_table="learned").train()
    table = model.encoder.embedding.positions
    assert isinstance(table, torch.nn.Parameter)
    assert model.decoder.embedding.positions is table  # one table, both sides
    src, src_mask, tgt = random_batch()
    model.output_proj(model(src, src_mask, tgt)).sum().backward()
    assert table.grad is not None and table.grad.abs().sum() > 0
    # a digit's row: the table's, where the sinusoids would have been
    sinusoidal = abacus_model(positions, number_table="sinusoidal")
    model.eval()
    with torch.no_grad():
        places = model.encoder.positions.numbers(src, real=src_mask)
        x = model.encoder.embedding(src, positions=places)
        token = model.encoder.embedding.token(src) * model.encoder.embedding.scale
        assert torch.equal(x, token + table[places])
        assert not torch.equal(x, sinusoidal.encoder.embedding(src, positions=places))
        full = torch.log_softmax(model.output_proj(model(src, src_mask, tgt)), -1)
        state = model.init_state(model.encode(src, src_mask), src_mask)
        for t in range(tgt.size(1)):
            log_probs, state = model.step(tgt[:, t], state)
            assert (log_probs - full[:, t]).abs().max() <= 1e-5


@pytest.mark.reference
def test_place_distances_are_those_of_digits_places_and_ignore_an_offset():
    from rosetta.nn.linear_bias import place_distances

    places = number_positions(DIGITS)  # 4 7 + 8 5 <eos>: 1 2 0 1 2 0
    found = place_distances(places, places)
    assert found.shape == (2, 1, 6, 6)
    assert found[0, 0].tolist() == [
        [0, -1, 0, 0, -1, 0],  # "4" and "8", three tokens apart, both units
        [1, 0, 0, 1, 0, 0],
        [0, 0, 0, 0, 0, 0],  # "+": by content alone
        [0, -1, 0, 0, -1, 0],
        [1, 0, 0, 1, 0, 0],
        [0, 0, 0, 0, 0, 0],
    ]
    moved = shifted(places, torch.tensor([[7], [30]]))
    assert torch.equal(place_distances(moved, moved), found)


@pytest.mark.reference
def test_abacus_alibi_trains_at_offset_0_exactly_as_it_decodes():
    """Training passes the source's places to the cross-attention as search
    does (``encode`` hands them to ``init_state``); at offset 0 the two agree."""
    from tests.families.transformer.test_model import random_batch

    model = abacus_model("abacus-alibi")
    src, src_mask, tgt = random_batch()
    with torch.no_grad():
        expected = model.eval()(src, src_mask, tgt)
        model.training_positions = lambda s, m, t: (
            model.encoder.positions.numbers(s, real=m),
            model.decoder.positions.numbers(t),
        )
        trained = model.train()(src, src_mask, tgt)
        _, places = model.encode(src, src_mask)
    assert (trained - expected).abs().max() <= 1e-5
    assert torch.equal(places, model.encoder.positions.numbers(src, real=src_mask))


def test_learned_places_are_for_positions_inside_numbers():
    from pydantic import ValidationError

    from rosetta.families.transformer.config import TransformerConfig

    with pytest.raises(ValidationError, match="number_table: learned is for abacus"):
        TransformerConfig(positions="alibi", number_table="learned")
    with pytest.raises(ValueError, match="number_table: learned is for abacus"):
        tiny_model(positions="sinusoidal", number_table="learned")
    TransformerConfig(positions="coupled", number_table="learned")


@pytest.mark.slow
def test_an_abacus_run_reports_the_exactness_a_fresh_load_gets(tmp_path):
    from rosetta.cli import main
    from rosetta.data.synthetic import accuracy
    from rosetta.jobs.loading import load_translator
    from rosetta.jobs.run_config import load_config
    from rosetta.jobs.training import run_training

    task = tmp_path / "task"
    flags = ["--lengths", "1-4", "--bands", "5-6", "--count", "300", "--valid", "20"]
    assert main(["task", "addition-lsb", "-o", str(task), *flags, "--test", "20"]) == 0
    config = load_config(
        task / "config.yaml",
        [
            "model.positions=abacus",
            "model.number_offset=8",
            "model.d_model=32",
            "model.d_ff=64",
            "train.max_steps=30",
            "train.validate_every=30",
            "train.threads=1",
        ],
    )
    run_training(config, tmp_path / "run")
    translator = load_translator(tmp_path / "run", which="latest", device="cpu")
    digits = translator.model.encoder.positions.numbers.is_digit
    pieces = translator.tokenizers.src.id_pieces(range(len(digits)))
    assert [p for p, d in zip(pieces, digits.tolist(), strict=True) if d] == sorted(
        "0123456789", key=pieces.index
    )
    sources = (task / "valid.src").read_text().splitlines()
    references = (task / "valid.tgt").read_text().splitlines()
    exact = 100 * accuracy(translator.translate(sources), references).exact
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    last = [json.loads(x) for x in lines if '"valid"' in x][-1]
    assert exact == pytest.approx(last["exact"], abs=1e-9)


def test_drawn_distances_at_positions_0_1_2_are_alibis_own():
    from rosetta.nn.linear_bias import (
        cross_distances,
        placed_cross_distances,
        placed_self_distances,
        self_distances,
    )

    src_mask = torch.tensor([[True] * 5, [True, True, True, False, False]])
    source = torch.arange(5).expand(2, -1)
    target = torch.arange(3).expand(2, -1)
    assert torch.equal(
        placed_cross_distances(target, source, src_mask, heads=4),
        cross_distances(0, 3, src_mask, heads=4),
    )
    assert torch.equal(
        placed_self_distances(target)[0, 0], self_distances(3, 3, torch.device("cpu"))
    )
    # spread out, every distance is that of the positions
    spread = torch.tensor([[0, 7, 9, 20, 31]])
    found = placed_cross_distances(spread[:, :2], spread, src_mask[:1], heads=2)
    assert found[0, 0].tolist() == [[0, -7, -9, -20, -31], [7, 0, -2, -13, -24]]
    # from the end: word j sits where word S−2−j does ("31" is <eos>)
    assert found[0, 1].tolist() == [[-20, -9, -7, 0, 1], [-13, -2, 0, 7, 8]]


@pytest.mark.reference
def test_alibi_randomized_trains_on_the_drawn_distances_and_decodes_as_alibi():
    """Outside training it is ALiBi itself; trained at positions 0, 1, 2, ...
    it is ALiBi too; at 0, 2, 4, ... every encoder distance doubles, the same
    as ALiBi with every slope doubled."""
    import math

    from rosetta.nn.linear_bias import LinearBiases
    from tests.families.transformer.test_model import random_batch

    drawn = tiny_model(positions="alibi-randomized")
    plain = tiny_model(positions="alibi")
    plain.load_state_dict(drawn.state_dict())
    src, src_mask, tgt = random_batch()

    def at(step):
        return lambda s, m, t: (
            step * torch.arange(s.size(1)).expand(s.size(0), -1),
            step * torch.arange(t.size(1)).expand(t.size(0), -1),
        )

    with torch.no_grad():
        expected = plain.eval()(src, src_mask, tgt)
        assert torch.equal(drawn.eval()(src, src_mask, tgt), expected)
        drawn.training_positions = at(1)
        assert (drawn.train()(src, src_mask, tgt) - expected).abs().max() <= 1e-5
        positions = at(2)(src, src_mask, tgt)[0]
        spread = drawn.encoder(src, src_mask, positions)
        for module in plain.modules():
            if isinstance(module, LinearBiases):
                module.log_slopes += math.log(2)
        doubled = plain.encoder(src, src_mask)
    assert (spread - doubled).abs().max() <= 1e-5


@pytest.mark.reference
def test_relative_randomized_scores_drawn_distances_and_decodes_as_relative():
    """Outside training it is ``relative`` itself; trained at ``0, 1, 2, ...``
    or at ``k, k+1, ...`` for any ``k`` it is ``relative`` too (distances
    alone count); spread out, the encoder's output changes."""
    from tests.families.transformer.test_model import random_batch

    drawn = tiny_model(positions="relative-randomized")
    plain = tiny_model(positions="relative")
    plain.load_state_dict(drawn.state_dict())
    src, src_mask, tgt = random_batch()

    def at(start, step=1):
        return lambda s, m, t: (
            start + step * torch.arange(s.size(1)).expand(s.size(0), -1),
            start + step * torch.arange(t.size(1)).expand(t.size(0), -1),
        )

    with torch.no_grad():
        expected = plain.eval()(src, src_mask, tgt)
        assert torch.equal(drawn.eval()(src, src_mask, tgt), expected)
        drawn.train()
        for start in (0, 17):
            drawn.training_positions = at(start)
            assert (drawn(src, src_mask, tgt) - expected).abs().max() <= 1e-4
        positions = at(0, step=3)(src, src_mask, tgt)[0]
        spread = drawn.encoder(src, src_mask, positions)
    assert (spread - plain.encoder(src, src_mask)).abs().max() > 1e-3


def test_coupled_positions_pair_every_significance_of_a_reversed_sum():
    """``addition-reversed``: operands most significant first, the sum least
    significant first. Coupled positions give a digit of significance s the
    position s + 1 in both operands and in the sum."""
    from rosetta.data.synthetic import target_of

    source = ["4", "7", "1", "+", "8", "5"]
    target = target_of("addition-reversed", source, list("0123456789"))
    assert target == ["6", "5", "5"]  # 471 + 85 = 556, units first

    def digits(symbols):
        return torch.tensor([[s.isdigit() for s in symbols]])

    significance_plus_one = [3, 2, 1, 0, 2, 1]
    found = number_positions(digits(source), from_end=True)[0].tolist()
    assert found == significance_plus_one
    assert number_positions(digits(target))[0].tolist() == [1, 2, 3]
