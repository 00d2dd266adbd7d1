import pytest
import torch

from rosetta.search import greedy_search, max_lengths
from tests.support.fakes import BOS, CONFIG_LIMIT, EOS, TableModel
from tests.support.next_token import next_token_log_probs
from tests.support.transformers import transformer

LIMIT = CONFIG_LIMIT

TABLE = {
    (): {4: 0.6, 5: 0.4},
    (4,): {5: 0.3, 6: 0.3, EOS: 0.4},
    (5,): {6: 0.9, EOS: 0.1},
}


def src_of(n, length=3):
    src = torch.full((n, length), 7)
    return src, torch.ones(n, length, dtype=torch.bool)


def test_greedy_takes_the_argmax_at_every_step():
    model = TableModel(TABLE, vocab=8)
    [hyp] = greedy_search(model, *src_of(1), bos_id=BOS, eos_id=EOS, **LIMIT)
    # 4 (0.6) then <eos> (0.4): greedy, although 5 6 <eos> has p=0.36 > 0.24
    assert hyp.tokens == [4]
    assert hyp.score == pytest.approx(model.log_prob([4, EOS]))


def test_max_length_is_a_times_source_plus_b():
    assert max_lengths(torch.tensor([4, 10]), 1.5, 2).tolist() == [8, 17]
    assert max_lengths(torch.tensor([4, 10]), 1.5, 2, cap=12).tolist() == [8, 12]
    looping = TableModel({(4,) * k: {4: 1.0} for k in range(50)}, vocab=8)
    src, mask = src_of(2, length=4)
    mask[1, 2:] = False
    hyps = greedy_search(
        looping, src, mask, bos_id=BOS, eos_id=EOS, max_len_a=1.0, max_len_b=1
    )
    assert [len(h.tokens) for h in hyps] == [5, 3]


def tiny_transformer(layers, seed):
    torch.manual_seed(seed)
    return transformer(
        12,
        12,
        d_model=32,
        heads=4,
        d_ff=64,
        dropout=0.0,
        encoder_layers=layers,
        decoder_layers=layers,
    ).eval()


def test_batched_greedy_equals_one_sentence_at_a_time_on_a_real_model():
    model = tiny_transformer(layers=2, seed=0)
    src = torch.randint(4, 12, (5, 7))
    lengths = torch.tensor([7, 6, 3, 1, 5])
    mask = torch.arange(7)[None] < lengths[:, None]
    src = src.masked_fill(~mask, 0)
    batched = greedy_search(model, src, mask, bos_id=BOS, eos_id=EOS, **LIMIT)
    for i in range(5):
        n = int(lengths[i])
        [alone] = greedy_search(
            model,
            src[i : i + 1, :n],
            mask[i : i + 1, :n],
            bos_id=BOS,
            eos_id=EOS,
            **LIMIT,
        )
        assert alone.tokens == batched[i].tokens
        assert alone.score == pytest.approx(batched[i].score, abs=1e-4)


@pytest.mark.reference
def test_greedy_score_equals_teacher_forced_rescoring():
    model = tiny_transformer(layers=1, seed=1)
    src = torch.randint(4, 12, (3, 6))
    mask = torch.ones_like(src, dtype=torch.bool)
    for hyp, row in zip(
        greedy_search(model, src, mask, bos_id=BOS, eos_id=EOS, **LIMIT),
        range(3),
        strict=True,
    ):
        tokens = hyp.tokens + ([EOS] if len(hyp.tokens) < 19 else [])
        tgt_in = torch.tensor([[BOS, *tokens[:-1]]])
        with torch.no_grad():
            log_probs = next_token_log_probs(
                model.output_proj(
                    model(src[row : row + 1], mask[row : row + 1], tgt_in)
                )
            )
        rescored = log_probs[0, torch.arange(len(tokens)), tokens].sum().item()
        assert hyp.score == pytest.approx(rescored, abs=1e-4)
