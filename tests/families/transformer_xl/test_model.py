"""The segment-recurrent language model: a segment read with the previous
one's memory is the same as one pass over both; token-by-token reading with
memory is teacher forcing; the memory is cut and carries no gradient."""

import pytest
import torch

from rosetta.families.transformer_xl.model import MemoryTransformerLM
from rosetta.nn.relative_attention import RelativeMultiHeadAttention


def tiny(norm_first=True, memory_length=16):
    torch.manual_seed(0)
    model = MemoryTransformerLM(
        30,
        layers=2,
        d_model=16,
        heads=2,
        d_ff=32,
        dropout=0.0,
        norm_first=norm_first,
        memory_length=memory_length,
    ).double()
    with torch.no_grad():  # make the relative biases count
        for module in model.modules():
            if isinstance(module, RelativeMultiHeadAttention):
                module.u.normal_()
                module.v.normal_()
    return model.eval()


def text(length, seed=1):
    return torch.randint(
        0, 30, (2, length), generator=torch.Generator().manual_seed(seed)
    )


@pytest.mark.reference
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_a_segment_with_memory_is_one_pass_over_both(norm_first):
    model = tiny(norm_first)
    tokens = text(11)
    with torch.no_grad():
        whole, _ = model(tokens)
        first, memory = model(tokens[:, :6])
        second, _ = model(tokens[:, 6:], memory)
    torch.testing.assert_close(first, whole[:, :6], rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(second, whole[:, 6:], rtol=1e-10, atol=1e-10)


@pytest.mark.reference
def test_reading_token_by_token_with_memory_is_teacher_forcing():
    model = tiny()
    tokens = text(9)
    with torch.no_grad():
        whole, _ = model(tokens)
        memory, steps = None, []
        for t in range(tokens.size(1)):
            features, memory = model(tokens[:, t : t + 1], memory)
            steps.append(features)
    torch.testing.assert_close(torch.cat(steps, 1), whole, rtol=1e-10, atol=1e-10)


def test_the_memory_is_cut_to_its_length_and_carries_no_gradient():
    model = tiny(memory_length=4).train()
    _, memory = model(text(6))
    assert [m.shape for m in memory] == [(2, 4, 16)] * 2
    assert not any(m.requires_grad for m in memory)
    second, memory = model(text(3, seed=2), memory)
    assert [m.shape for m in memory] == [(2, 4, 16)] * 2  # 4 of the 4 + 3 seen
    second.sum().backward()  # through this segment only: nothing to free twice
    assert model.token.weight.grad is not None
    _, none = model(text(3), memory_length=0)
    assert [m.shape for m in none] == [(2, 0, 16)] * 2


def test_without_memory_a_segment_sees_only_itself():
    model = tiny(memory_length=0)
    tokens = text(10)
    with torch.no_grad():
        _, memory = model(tokens[:, :5])
        alone, _ = model(tokens[:, 5:])
        after, _ = model(tokens[:, 5:], memory)
    torch.testing.assert_close(after, alone)


@pytest.mark.reference
@pytest.mark.parametrize(
    ("segment", "memory", "rows"),
    [(8, 8, 4), (8, 20, 5), (16, 0, 3), (8, 8, 64)],  # M = L, M > L, none, many
)
def test_rows_warmed_up_score_the_text_as_reading_it_in_order(segment, memory, rows):
    """Each row reads, unscored, the segments before its stretch: every token
    is predicted as one row in order predicts it."""
    from rosetta.inference.text_scoring import score_text

    torch.manual_seed(0)
    model = MemoryTransformerLM(
        50, layers=3, d_model=32, heads=4, d_ff=64, memory_length=memory
    ).eval()
    ids = torch.randint(4, 50, (301,)).tolist()
    cpu = torch.device("cpu")
    in_order = score_text(model, ids, segment, memory, cpu, streams=1)
    side_by_side = score_text(model, ids, segment, memory, cpu, streams=rows)
    assert side_by_side.tokens == in_order.tokens == 300
    assert side_by_side.nll_sum == pytest.approx(in_order.nll_sum, rel=1e-5)


def test_without_warming_up_the_rows_would_score_otherwise(monkeypatch):
    from rosetta.inference import text_scoring as scoring

    torch.manual_seed(0)
    model = MemoryTransformerLM(
        50, layers=3, d_model=32, heads=4, d_ff=64, memory_length=8
    ).eval()
    ids = torch.randint(4, 50, (301,)).tolist()
    cpu = torch.device("cpu")
    in_order = scoring.score_text(model, ids, 8, 8, cpu, streams=1)
    monkeypatch.setattr(scoring, "warm_up_segments", lambda *_: 1)  # too few
    cold = scoring.score_text(model, ids, 8, 8, cpu, streams=4)
    assert cold.nll_sum != pytest.approx(in_order.nll_sum, rel=1e-5)


def test_reading_with_memory_makes_every_tensor_on_the_inputs_device():
    """The meta device stands in for a GPU: a tensor made on the CPU and
    mixed with the inputs fails here as it would on CUDA."""
    model = tiny().to("meta")
    tokens = text(9).to("meta")
    with torch.no_grad():
        _, memory = model(tokens[:, :5])
        features, _ = model(tokens[:, 5:], memory)
    assert features.device.type == "meta"
