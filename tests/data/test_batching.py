import numpy as np
import pytest
import torch

from rosetta.data import EncodedPairs, Example, collate, make_batches, padding_share
from rosetta.data.batching import cut_runs, pad, rank_share
from rosetta.data.vocab import BOS_ID, EOS_ID, PAD_ID


def test_collate_makes_the_shift_of_spec_section_1():
    batch = collate([Example([5, 6, 7], [8, 9]), Example([5], [10, 11, 12])])
    assert batch.src.tolist() == [[5, 6, 7, EOS_ID], [5, EOS_ID, PAD_ID, PAD_ID]]
    assert batch.src_lengths.tolist() == [4, 2]
    assert batch.tgt_in.tolist() == [[BOS_ID, 8, 9, PAD_ID], [BOS_ID, 10, 11, 12]]
    assert batch.tgt_out.tolist() == [[8, 9, EOS_ID, PAD_ID], [10, 11, 12, EOS_ID]]
    assert batch.tgt_lengths.tolist() == [3, 4]
    assert batch.src_mask.tolist() == [[True] * 4, [True, True, False, False]]


def padded_row_by_row(sequences):
    """Right-padding a sentence at a time: the reference."""
    width = max(len(s) for s in sequences)
    return [[*s, *[PAD_ID] * (width - len(s))] for s in sequences]


@pytest.mark.reference
def test_pairs_collated_at_once_equal_the_row_by_row_reference():
    rng = np.random.default_rng(3)
    examples = [
        Example(rng.integers(4, 99, rng.integers(0, 20)).tolist(), [])
        if i % 7 == 0
        else Example(*(rng.integers(4, 99, rng.integers(1, 20)).tolist() for _ in "st"))
        for i in range(60)
    ]
    pairs = EncodedPairs.from_examples(examples).subset(np.arange(60) % 5 != 0)
    indices = [40, 3, 17, 17, 0, 29]
    chosen = [pairs[i] for i in indices]
    for batch in (pairs.collate(np.array(indices)), collate(chosen)):
        assert batch.src.tolist() == padded_row_by_row(
            [[*e.src, EOS_ID] for e in chosen]
        )
        assert batch.tgt_in.tolist() == padded_row_by_row(
            [[BOS_ID, *e.tgt] for e in chosen]
        )
        assert batch.tgt_out.tolist() == padded_row_by_row(
            [[*e.tgt, EOS_ID] for e in chosen]
        )
        assert batch.src_lengths.tolist() == [len(e.src) + 1 for e in chosen]
        assert batch.tgt_lengths.tolist() == [len(e.tgt) + 1 for e in chosen]
        assert {t.dtype for t in vars(batch).values()} == {torch.int64}
    sequences = [e.tgt for e in chosen]
    assert pad(sequences).tolist() == padded_row_by_row(sequences)


def random_examples(count=500, seed=0):
    """Source and target lengths correlate, as in real parallel text."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 40, count)
    return [
        Example([4] * int(n), [5] * max(1, int(n + rng.integers(-3, 4))))
        for n in lengths
    ]


def lengths(examples):
    pairs = EncodedPairs.from_examples(examples)
    return pairs.src_lengths, pairs.tgt_lengths


def batches_one_example_at_a_time(examples, batch_tokens, rng=None):
    """Bucketing as Rosetta did it on lists of examples: the reference."""
    order = np.arange(len(examples))
    if rng is not None:
        order = rng.permutation(len(examples))
    src_len = np.array([len(examples[i].src) + 1 for i in order])
    tgt_len = np.array([len(examples[i].tgt) + 1 for i in order])
    order = order[np.lexsort((src_len, tgt_len))]
    batches, current, longest = [], [], 0
    for index in order:
        length = max(len(examples[index].src), len(examples[index].tgt)) + 1
        if current and max(longest, length) * (len(current) + 1) > batch_tokens:
            batches.append(current)
            current, longest = [], 0
        current.append(int(index))
        longest = max(longest, length)
    if current:
        batches.append(current)
    if rng is not None:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


@pytest.mark.reference
@pytest.mark.parametrize("seed", [None, 0, 1, 2])
@pytest.mark.parametrize("budget", [1, 60, 300, 2000])
def test_batches_from_lengths_equal_the_example_by_example_reference(seed, budget):
    examples = random_examples(count=700, seed=3)
    rng = None if seed is None else np.random.default_rng(seed)
    got = make_batches(*lengths(examples), budget, rng)
    rng = None if seed is None else np.random.default_rng(seed)
    assert [b.tolist() for b in got] == batches_one_example_at_a_time(
        examples, budget, rng
    )


def cuts_one_pair_at_a_time(padded, budget):
    """The batching rule applied pair by pair: the reference for ``cut_runs``."""
    cuts, size, longest = [], 0, 0
    for position, length in enumerate(padded.tolist()):
        if size and max(longest, length) * (size + 1) > budget:
            cuts.append(position)
            size = longest = 0
        size += 1
        longest = max(longest, length)
    return cuts


@pytest.mark.reference
@pytest.mark.parametrize("budget", [1, 7, 40, 59, 300, 5000])
@pytest.mark.parametrize("order", ["sorted", "shuffled", "few lengths"])
def test_cutting_a_run_at_a_time_equals_a_pair_at_a_time(budget, order):
    rng = np.random.default_rng(budget)
    tgt = np.sort(rng.integers(2, 50, 3000))  # sorted by target, as batching does
    padded = np.maximum(tgt, rng.integers(2, 60, 3000))
    if order == "shuffled":
        padded = rng.permutation(padded)
    if order == "few lengths":  # long runs, some longer than the budget
        padded = np.repeat(rng.integers(1, 80, 40), rng.integers(1, 200, 40))
    assert cut_runs(padded, budget) == cuts_one_pair_at_a_time(padded, budget)


def test_shuffling_indices_draws_as_a_permutation_does():
    order = np.arange(10_000, dtype=np.int32)
    np.random.default_rng(7).shuffle(order)
    assert order.tolist() == np.random.default_rng(7).permutation(10_000).tolist()


def test_no_pairs_make_no_batches():
    assert make_batches(*lengths([]), 100) == []
    assert padding_share(*lengths([]), []) == 0.0


def test_batches_respect_the_token_budget_and_cover_every_example():
    examples = random_examples()
    batches = make_batches(*lengths(examples), 300, np.random.default_rng(1))
    assert sorted(i for b in batches for i in b) == list(range(len(examples)))
    for batch in batches:
        longest = max(
            max(len(examples[i].src), len(examples[i].tgt)) + 1 for i in batch
        )
        assert longest * len(batch) <= 300


def test_bucketing_keeps_padding_low_and_epochs_differ_reproducibly():
    examples = random_examples()
    bucketed = make_batches(*lengths(examples), 600, np.random.default_rng(1))
    unsorted = [np.arange(i, min(i + 20, 500)) for i in range(0, 500, 20)]
    share = padding_share(*lengths(examples), bucketed)
    assert share < padding_share(*lengths(examples), unsorted) / 2
    again = make_batches(*lengths(examples), 600, np.random.default_rng(1))
    other = make_batches(*lengths(examples), 600, np.random.default_rng(2))
    as_lists = lambda batches: [b.tolist() for b in batches]  # noqa: E731
    assert as_lists(bucketed) == as_lists(again) != as_lists(other)


def test_padding_share_counts_every_padded_slot():
    examples = [Example([4] * 3, [5]), Example([4], [5] * 5), Example([4], [5])]
    # batch [0, 1]: source 4 and 2 of 4 slots each, target 2 and 6 of 6 each
    share = padding_share(*lengths(examples), [np.array([0, 1]), np.array([2])])
    real = (4 + 2 + 2 + 6) + (2 + 2)
    assert share == 1 - real / (2 * (4 + 6) + (2 + 2))


def test_every_batch_of_an_update_goes_to_one_process_and_counts_are_equal():
    group = [[i] for i in range(5)]  # an uneven last group: 5 batches, 3 processes
    shares = [rank_share(group, rank, 3) for rank in range(3)]
    assert [len(share) for share in shares] == [2, 2, 2]
    real = [batch[0] for share in shares for batch, counts in share if counts]
    assert sorted(real) == [0, 1, 2, 3, 4]
    assert [counts for _, counts in shares[2]] == [True, False]
    assert rank_share(group, 0, 1) == [(batch, True) for batch in group]


def test_empty_and_too_long_pairs_are_filtered_and_counted():
    from rosetta.config.sections import TokenizerConfig
    from rosetta.data import TokenizerPair, encode_pairs

    pairs = [("a b", "x y"), ("", "x"), ("a", "  "), ("a " * 50, "x"), ("b", "y")]
    tokenizers = TokenizerPair.train(pairs, TokenizerConfig(kind="word"))
    examples, report = encode_pairs(pairs, tokenizers, max_len=10)
    assert len(examples) == report.kept == 2
    assert report.dropped == {"empty": 2, "longer than 10 tokens": 1}
    assert report.summary() == "2 of 5 pairs kept (2 empty, 1 longer than 10 tokens)"
