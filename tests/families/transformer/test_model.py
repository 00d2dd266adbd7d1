import pytest
import torch
from torch import nn

from rosetta.families.transformer.fast.packed import pack_for_inference
from rosetta.families.transformer.layers import (
    TransformerDecoderLayer,
    TransformerEncoderLayer,
)
from rosetta.families.transformer.model import causal_mask
from rosetta.families.transformer.positions import SCHEMES
from rosetta.families.transformer.positions.draws import draw_offsets, draw_positions
from rosetta.nn import LayerSizes
from rosetta.nn.linear_bias import LinearBiases, cross_distances, self_distances
from rosetta.nn.relative_attention import RelativeMultiHeadAttention
from rosetta.train import label_smoothed_cross_entropy
from tests.nn.test_attention import copy_into_torch
from tests.support.transformers import transformer

POSITIONS = tuple(SCHEMES)

D, HEADS, FF = 32, 4, 64


def copy_ffn_and_norms(ours, theirs, norms):
    with torch.no_grad():
        theirs.linear1.load_state_dict(ours.ffn.linear1.state_dict())
        theirs.linear2.load_state_dict(ours.ffn.linear2.state_dict())
        for ours_norm, theirs_norm in norms:
            theirs_norm.load_state_dict(ours_norm.norm.state_dict())


@pytest.mark.reference
def test_encoder_layer_equals_torch():
    torch.manual_seed(0)
    ours = TransformerEncoderLayer(LayerSizes(D, HEADS, FF, dropout=0.0)).eval()
    theirs = nn.TransformerEncoderLayer(
        D, HEADS, FF, dropout=0.0, batch_first=True, norm_first=False
    ).eval()
    copy_into_torch(ours.self_attn, theirs.self_attn)
    copy_ffn_and_norms(
        ours, theirs, [(ours.attn_res, theirs.norm1), (ours.ffn_res, theirs.norm2)]
    )
    x = torch.randn(3, 6, D)
    real = torch.arange(6)[None] < torch.tensor([6, 3, 1])[:, None]
    out = ours(x, real[:, None, None, :])
    expected = theirs(x, src_key_padding_mask=~real)
    # torch's fast path may zero padded rows; compare real positions
    assert (out - expected)[real].abs().max() <= 1e-5


@pytest.mark.reference
def test_decoder_layer_equals_torch():
    torch.manual_seed(1)
    ours = TransformerDecoderLayer(LayerSizes(D, HEADS, FF, dropout=0.0)).eval()
    theirs = nn.TransformerDecoderLayer(
        D, HEADS, FF, dropout=0.0, batch_first=True, norm_first=False
    ).eval()
    copy_into_torch(ours.self_attn, theirs.self_attn)
    copy_into_torch(ours.cross_attn, theirs.multihead_attn)
    copy_ffn_and_norms(
        ours,
        theirs,
        [
            (ours.self_res, theirs.norm1),
            (ours.cross_res, theirs.norm2),
            (ours.ffn_res, theirs.norm3),
        ],
    )
    x, memory = torch.randn(2, 5, D), torch.randn(2, 7, D)
    src_real = torch.arange(7)[None] < torch.tensor([7, 4])[:, None]
    tgt_real = torch.arange(5)[None] < torch.tensor([5, 3])[:, None]
    self_mask = causal_mask(5, 5, x.device) & tgt_real[:, None, None, :]
    memory_kv = ours.cross_attn.project_key_value(memory, memory)
    out, _, _ = ours(x, memory_kv, src_real[:, None, None, :], self_mask)
    expected = theirs(
        x,
        memory,
        tgt_mask=~causal_mask(5, 5, x.device),
        tgt_key_padding_mask=~tgt_real,
        memory_key_padding_mask=~src_real,
    )
    assert (out - expected)[tgt_real].abs().max() <= 1e-5


def tiny_model(**overrides):
    torch.manual_seed(3)
    options = dict(
        encoder_layers=2,
        decoder_layers=2,
        d_model=D,
        heads=HEADS,
        d_ff=FF,
        dropout=0.0,
        max_positions=64,
    )
    options.update(overrides)
    # tokens 4-8 are digits (abacus, coupled): random batches hold numbers
    digits = torch.arange(11).sub(4).lt(5) & torch.arange(11).ge(4)
    digits = (digits, torch.cat([digits, torch.zeros(2, dtype=torch.bool)]))
    model = transformer(11, 13, **options, digits=digits).eval()
    with torch.no_grad():  # relative attention's biases start at 0: make them count
        for module in model.modules():
            if isinstance(module, RelativeMultiHeadAttention):
                module.u.normal_()
                module.v.normal_()
            if isinstance(module, LinearBiases):  # slopes from ~0.1 to ~10
                module.log_slopes.normal_()
    return model


def random_batch(seed=4):
    generator = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 11, (3, 8), generator=generator)
    src_lengths = torch.tensor([8, 5, 2])
    src_mask = torch.arange(8)[None] < src_lengths[:, None]
    src = src.masked_fill(~src_mask, 0)
    tgt = torch.randint(4, 13, (3, 6), generator=generator)
    tgt[:, 0] = 2
    return src, src_mask, tgt


@pytest.mark.reference
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("positions", POSITIONS)
def test_cached_steps_equal_teacher_forcing(norm_first, positions):
    model = tiny_model(norm_first=norm_first, positions=positions)
    src, src_mask, tgt = random_batch()
    with torch.no_grad():
        logits = model.output_proj(model(src, src_mask, tgt))  # (n, T, V)
        full = torch.log_softmax(logits, dim=-1)
        state = model.init_state(model.encode(src, src_mask), src_mask)
        for t in range(tgt.size(1)):
            log_probs, state = model.step(tgt[:, t], state)
            assert (log_probs - full[:, t]).abs().max() <= 1e-5


def test_reorder_selects_rows_of_the_cache():
    model = tiny_model()
    src, src_mask, tgt = random_batch()
    with torch.no_grad():
        state = model.init_state(model.encode(src, src_mask), src_mask)
        _, state = model.step(tgt[:, 0], state)
        index = torch.tensor([2, 0, 0])
        reordered = state.reorder(index)
        expected, _ = model.step(tgt[index, 1], reordered)
        direct, _ = model.step(tgt[:, 1], state)
        assert torch.allclose(expected, direct[index], atol=1e-6)


@pytest.mark.parametrize("positions", POSITIONS)
@pytest.mark.parametrize(
    ("index", "group", "memory_copied"),
    [
        ([0, 0, 0, 1, 1, 1, 2, 2, 2], 3, False),  # beams of each sentence
        ([0, 0, 2, 2], 2, True),  # sentence 1 finished
        ([2, 0, 0], 1, True),  # uneven: one memory row per row
    ],
)
def test_beams_share_their_sentences_memory_and_step_as_if_copied(
    index, group, memory_copied, positions
):
    model = tiny_model(positions=positions)
    src, src_mask, tgt = random_batch()
    index = torch.tensor(index)
    with torch.no_grad():
        state = model.init_state(model.encode(src, src_mask), src_mask)
        shared = state.reorder(index)
        assert shared.group == group
        assert (shared.memory_kv[0][0] is not state.memory_kv[0][0]) == memory_copied
        assert shared.src_mask.size(0) == len(index) // group
        # The same rows decoded with the memory copied out row by row.
        one_per_row = model.init_state(
            model.encode(src[index], src_mask[index]), src_mask[index]
        )
        prev = tgt[index, 0]
        for t in range(1, 4):
            grouped, shared = model.step(prev, shared, need_attention=True)
            copied, one_per_row = model.step(prev, one_per_row, need_attention=True)
            assert torch.allclose(grouped, copied, atol=1e-5)
            assert torch.allclose(shared.attention, one_per_row.attention, atol=1e-6)
            # a beam step: each row continues row r // 2 * 2 (sentence kept)
            parents = torch.arange(len(index)) // group * group
            shared, one_per_row = shared.reorder(parents), one_per_row.reorder(parents)
            prev = tgt[index, t][parents]


@pytest.mark.parametrize("positions", POSITIONS)
def test_padding_content_never_changes_real_outputs_or_the_loss(positions):
    model = tiny_model(positions=positions)
    src, src_mask, tgt = random_batch()
    tgt_mask = torch.arange(6)[None] < torch.tensor([6, 4, 2])[:, None]
    with torch.no_grad():
        before = model(src, src_mask, tgt, tgt_mask)
        noisy_src = torch.where(src_mask, src, torch.randint(4, 11, src.shape))
        noisy_tgt = torch.where(tgt_mask, tgt, torch.randint(4, 13, tgt.shape))
        after = model(noisy_src, src_mask, noisy_tgt, tgt_mask)
    assert (before - after)[tgt_mask].abs().max() <= 1e-5
    labels = torch.where(tgt_mask, torch.randint(4, 13, tgt.shape), 0)
    loss_before = label_smoothed_cross_entropy(before, labels, 0.1, 0)[0]
    loss_after = label_smoothed_cross_entropy(after, labels, 0.1, 0)[0]
    assert abs(loss_before.item() - loss_after.item()) <= 1e-4


def test_shared_and_tied_embeddings_are_one_parameter():
    model = transformer(
        20, 20, d_model=16, heads=2, d_ff=32, share_embeddings=True, tie_output=True
    )
    assert model.encoder.embedding is model.decoder.embedding
    assert model.output_proj.weight is model.decoder.embedding.token.weight
    with pytest.raises(ValueError, match="one vocabulary"):
        transformer(20, 21, d_model=16, heads=2, share_embeddings=True)


def test_too_long_input_is_a_clear_error():
    model = tiny_model()
    src = torch.ones(1, 65, dtype=torch.long)
    with pytest.raises(ValueError, match="max_positions"):
        model.encode(src, src > 0)


def test_drawn_positions_are_distinct_sorted_and_cover_the_table():
    torch.manual_seed(0)
    drawn = draw_positions(500, 7, 64, torch.device("cpu"))
    assert drawn.shape == (500, 7)
    assert bool((drawn[:, 1:] > drawn[:, :-1]).all())  # sorted, hence distinct
    assert int(drawn.min()) == 0 and int(drawn.max()) == 63
    # far positions are drawn as often as in a uniform 7-subset of 0..63
    assert abs(float((drawn >= 40).float().mean()) - 24 / 64) < 0.03
    assert (
        draw_positions(3, 5, 5, torch.device("cpu")).tolist() == [[0, 1, 2, 3, 4]] * 3
    )
    with pytest.raises(ValueError, match="max_positions"):
        draw_positions(1, 9, 8, torch.device("cpu"))


@pytest.mark.parametrize(
    ("positions", "draw"),
    [("randomized", draw_positions), ("shifted", draw_offsets)],
)
def test_random_positions_place_source_and_target_tokens_on_one_position(
    positions, draw
):
    model = tiny_model(positions=positions)
    sinusoidal = tiny_model()  # the same weights: one seed, no new parameters
    sinusoidal.load_state_dict(model.state_dict())
    src, src_mask, tgt = random_batch()
    with torch.no_grad():
        assert torch.equal(model(src, src_mask, tgt), sinusoidal(src, src_mask, tgt))
        torch.manual_seed(5)
        trained = model.train()(src, src_mask, tgt)
        torch.manual_seed(5)
        drawn = draw(3, 8, 64, torch.device("cpu"))
        memory = sinusoidal.encoder(src, src_mask, drawn)
        state = sinusoidal.init_state(memory, src_mask)
        expected, _ = sinusoidal.decoder(tgt, state, positions=drawn[:, :6])
        assert torch.allclose(trained, expected, atol=1e-6)
        assert not torch.allclose(trained, sinusoidal(src, src_mask, tgt), atol=1e-3)


@pytest.mark.parametrize("positions", ["randomized", "shifted"])
def test_random_positions_with_a_table_as_long_as_the_batch_are_sinusoidal(
    positions,
):
    model = tiny_model(positions=positions, max_positions=8)
    src, src_mask, tgt = random_batch()
    with torch.no_grad():
        assert torch.equal(
            model.train()(src, src_mask, tgt), model.eval()(src, src_mask, tgt)
        )


def test_shifted_positions_are_consecutive_from_every_start():
    torch.manual_seed(0)
    drawn = draw_offsets(2000, 5, 16, torch.device("cpu"))
    assert bool((drawn[:, 1:] - drawn[:, :-1] == 1).all())
    assert sorted(set(drawn[:, 0].tolist())) == list(range(12))
    with pytest.raises(ValueError, match="max_positions"):
        draw_offsets(1, 9, 8, torch.device("cpu"))


def test_nope_adds_positions_in_the_encoder_only_and_shares_the_tokens():
    model = transformer(
        20, 20, d_model=16, heads=2, d_ff=32, share_embeddings=True, positions="nope"
    ).eval()
    tokens = torch.tensor([[5, 5, 5]])
    decoded = model.decoder.embedding(tokens, offset=4)
    assert torch.equal(decoded[0, 0], decoded[0, 2])
    encoded = model.encoder.embedding(tokens)
    assert not torch.equal(encoded[0, 0], encoded[0, 2])
    assert model.decoder.embedding.token is model.encoder.embedding.token
    assert model.output_proj.weight is model.encoder.embedding.token.weight


def test_cross_distances_count_from_the_first_word_and_from_the_last():
    # two sources: "a b c <eos>" and "a <eos> <pad> <pad>"; 4 heads, 2 per end
    src_mask = torch.tensor([[True] * 4, [True, True, False, False]])
    found = cross_distances(1, 2, src_mask, heads=4)  # target positions 1 and 2
    assert found.shape == (2, 4, 2, 4)
    assert torch.equal(found[0, 0], torch.tensor([[1, 0, -1, -2], [2, 1, 0, -1]]))
    assert torch.equal(found[0, 1], found[0, 0])
    # from the end, the last word ("c", column 2) is position 0, <eos> is -1
    assert torch.equal(found[0, 2], torch.tensor([[-1, 0, 1, 2], [0, 1, 2, 3]]))
    assert torch.equal(found[0, 3], found[0, 2])
    # a one-word source: its word is position 0 from either end
    assert torch.equal(found[1, 2, 0, :2], torch.tensor([1, 2]))
    assert torch.equal(found[1, 0, 0, :2], torch.tensor([1, 0]))
    # the last 2 of 4 decoder positions against all 4
    back = self_distances(2, 4, torch.device("cpu"))
    assert torch.equal(back, torch.tensor([[2, 1, 0, -1], [3, 2, 1, 0]]))


@pytest.mark.reference
def test_alibi_scores_are_the_formula_and_hold_no_positions():
    model = tiny_model(positions="alibi")
    src, src_mask, _ = random_batch()
    encoder = model.encoder
    layer = encoder.layers[0]
    slopes = encoder.positions.biases.log_slopes[0].exp()
    x = encoder.embedding(src)
    assert torch.allclose(x, encoder.embedding.token(src) * encoder.embedding.scale)
    with torch.no_grad():
        h = layer.attn_res.before(x)
        q = layer.self_attn.project_query(h)
        k, v = layer.self_attn.project_key_value(h, h)
        i = torch.arange(src.size(1))
        scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
        scores = scores - slopes[:, None, None] * (i[:, None] - i[None, :]).abs()
        scores = scores.masked_fill(~src_mask[:, None, None, :], float("-inf"))
        heads = (torch.softmax(scores, -1) @ v).transpose(1, 2).flatten(2)
        by_hand = layer.attn_res.after(x, layer.self_attn.out_proj(heads))
        by_hand = layer.ffn_res.after(by_hand, layer.ffn(layer.ffn_res.before(by_hand)))
        mask = encoder.positions.biases.bias(
            0, self_distances(8, 8, src.device), src_mask[:, None, None, :]
        )
        assert (layer(x, mask) - by_hand)[src_mask].abs().max() <= 1e-5


def test_alibi_is_never_packed():
    model = tiny_model(positions="alibi")
    assert pack_for_inference(model) is model  # the packed step adds no biases
    assert pack_for_inference(tiny_model()) is not tiny_model()


def test_each_end_of_the_cross_attention_starts_with_the_whole_slope_series():
    model = transformer(20, 20, d_model=32, heads=4, positions="alibi")
    cross = model.decoder.positions.cross_biases.log_slopes.exp()
    assert torch.allclose(cross[0], torch.tensor([1, 2**-4, 1, 2**-4]))
    six = transformer(20, 20, d_model=36, heads=6, positions="alibi")
    cross = six.decoder.positions.cross_biases.log_slopes.exp()
    third = 2 ** (-8 / 3)
    expected = torch.tensor([1, third, third**2] * 2)
    assert torch.allclose(cross[1], expected)
    encoder = model.encoder.positions.biases.log_slopes.exp()
    assert torch.allclose(encoder[1], torch.tensor([2**-2, 2**-4, 2**-6, 2**-8]))


def test_the_configuration_offers_and_describes_every_listed_scheme():
    from pydantic import ValidationError

    from rosetta.families.transformer.config import TransformerConfig

    description = TransformerConfig.model_fields["positions"].description
    for name in POSITIONS:
        assert TransformerConfig(positions=name).positions == name
        assert f"{name}: " in description
    with pytest.raises(ValidationError, match="use one of sinusoidal, relative"):
        TransformerConfig(positions="sinusoids")


# abacus, coupled and abacus-alibi check their positions against the table: a value the
# meta device does not have (a GPU has it)
@pytest.mark.parametrize(
    "positions",
    [p for p in POSITIONS if p not in ("abacus", "coupled", "abacus-alibi")],
)
def test_teacher_forcing_and_a_step_make_every_tensor_on_the_inputs_device(positions):
    """The meta device stands in for a GPU: a tensor made on the CPU and
    mixed with the inputs fails here as it would on CUDA."""
    model = tiny_model(positions=positions).to("meta").eval()
    src, src_mask, tgt = (t.to("meta") for t in random_batch())
    with torch.no_grad():
        features = model(src, src_mask, tgt)
        state = model.init_state(model.encode(src, src_mask), src_mask)
        log_probs, _ = model.step(tgt[:, 0], state)
    assert features.device.type == log_probs.device.type == "meta"
