"""Synthetic tasks: each generator writes what its task says, at the lengths
asked, with no test source in the training set."""

import json
import random

import pytest

from rosetta.cli import main
from rosetta.config.sections import CorpusFiles
from rosetta.data.corpus import read_corpus
from rosetta.data.synthetic import (
    TaskSpec,
    draw_source,
    parse_band,
    target_of,
    write_task,
)
from rosetta.errors import RosettaError
from rosetta.jobs.loading import load_translator

ALPHABET = list("abcdefghij")


@pytest.mark.parametrize(
    ("task", "source", "target"),
    [
        ("copy", "c a b", "c a b"),
        ("reverse", "c a b", "b a c"),
        ("sort", "c a b a", "a a b c"),
        ("duplicate", "c a b", "c a b c a b"),
        ("addition", "4 7 + 8 5", "1 3 2"),
        ("addition", "0 + 0", "0"),
        ("addition", "9 9 9 + 1 0 0", "1 0 9 9"),
        ("addition-lsb", "7 4 + 5 8", "2 3 1"),
        ("addition-lsb", "9 9 9 + 0 0 1", "9 9 0 1"),
        ("addition-reversed", "4 7 + 8 5", "2 3 1"),
        ("addition-reversed", "9 9 9 + 1 0 0", "9 9 0 1"),
    ],
)
def test_each_task_maps_a_hand_checked_example(task, source, target):
    assert " ".join(target_of(task, source.split(), ALPHABET)) == target


def test_sort_follows_the_alphabets_order_not_the_characters():
    assert target_of("sort", list("xay"), list("yxa")) == list("yxa")


@pytest.mark.parametrize("task", ["addition", "addition-lsb", "addition-reversed"])
def test_additions_have_two_numbers_of_the_length_without_leading_zeros(task):
    rng = random.Random(0)
    most_significant = -1 if task == "addition-lsb" else 0
    for length in (1, 2, 5):
        for _ in range(50):
            source = draw_source(task, length, ALPHABET, rng)
            plus = source.index("+")
            left, right = source[:plus], source[plus + 1 :]
            assert len(left) == len(right) == length
            if length > 1:
                assert left[most_significant] != "0"
                assert right[most_significant] != "0"


def test_the_two_additions_are_one_sum_written_both_ways():
    rng = random.Random(1)
    for length in (1, 3, 12):
        source = draw_source("addition", length, ALPHABET, rng)
        plus = source.index("+")
        flipped = [*source[plus - 1 :: -1], "+", *source[:plus:-1]]
        assert (
            target_of("addition-lsb", flipped, ALPHABET)
            == (target_of("addition", source, ALPHABET)[::-1])
        )


def read_lines_of(folder):
    return (folder / "train.src").read_text().splitlines()


def test_the_written_splits_have_their_lengths_and_no_test_source_in_training(
    tmp_path,
):
    spec = TaskSpec(
        "reverse", lengths=(1, 6), count=300, valid=40, test=40, bands=((7, 9),)
    )
    # 80 test and validation sources drawn over lengths 1-6 take all ten of
    # length 1 (each is kept out of training), which the user is told
    with pytest.warns(UserWarning, match="no training source of length 1: "):
        counts = write_task(spec, tmp_path)
    assert counts == {"test": 40, "valid": 40, "test-7-9": 40, "train": 300}
    assert not any(len(source.split()) == 1 for source in read_lines_of(tmp_path))
    split = {
        name: read_corpus(
            CorpusFiles(src=tmp_path / f"{name}.src", tgt=tmp_path / f"{name}.tgt")
        )
        for name in counts
    }
    for name, pairs in split.items():
        low, high = (7, 9) if name == "test-7-9" else (1, 6)
        for source, target in pairs:
            assert low <= len(source.split()) <= high
            assert target.split() == source.split()[::-1]
    train = {source for source, _ in split["train"]}
    assert not train & {source for source, _ in split["test"]}
    assert not train & {source for source, _ in split["valid"]}
    assert len(train) == 300  # distinct
    assert json.loads((tmp_path / "task.json").read_text())["pairs"] == counts


def test_the_same_seed_writes_the_same_files(tmp_path):
    spec = TaskSpec("sort", lengths=(2, 5), count=50, valid=5, test=5, bands=())
    write_task(spec, tmp_path / "a")
    write_task(spec, tmp_path / "b")
    for name in ("train.src", "train.tgt", "test.src"):
        first, second = (tmp_path / run / name for run in ("a", "b"))
        assert first.read_text() == second.read_text()


def test_impossible_requests_are_clear_errors(tmp_path):
    tiny = TaskSpec("copy", lengths=(1, 1), count=50, valid=2, test=2, bands=())
    with pytest.raises(RosettaError, match="train: cannot draw 50 distinct sources"):
        write_task(tiny, tmp_path)
    with pytest.raises(RosettaError, match="expected LOW-HIGH"):
        parse_band("short")
    with pytest.raises(RosettaError, match="need 1 <= LOW <= HIGH"):
        parse_band("9-3")


def test_the_command_writes_the_files_it_lists(tmp_path, capsys):
    out = tmp_path / "dup"
    flags = ["--lengths", "1-4", "--count", "100", "--valid", "10", "--test", "10"]
    assert main(["task", "duplicate", "-o", str(out), *flags, "--bands", "5-8"]) == 0
    printed = capsys.readouterr().out
    for name in ("train", "valid", "test", "test-5-8"):
        assert f"{out / name}.src/.tgt" in printed
    first = (out / "train.src").read_text().splitlines()[0].split()
    assert (out / "train.tgt").read_text().splitlines()[0].split() == first * 2


def test_accuracy_counts_whole_outputs_and_positions_over_the_longer():
    from rosetta.data.synthetic import accuracy

    score = accuracy(["a b c", "a b", "a x c d", ""], ["a b c", "a b c", "a b c", "a"])
    assert score.exact == 0.25
    # 3 of 3, 2 of 3, 2 of 4, 0 of 1
    assert score.per_token == pytest.approx(7 / 11)
    with pytest.raises(RosettaError, match="2 outputs for 1"):
        accuracy(["a", "b"], ["a"])


@pytest.mark.slow
def test_the_written_config_trains_and_validates_by_exact_accuracy(tmp_path):
    """``rosetta task`` writes a config that trains as it is (made smaller
    here); validation reports exact-sequence accuracy, which picks the best
    checkpoint, and a model that cannot attend or decode cannot copy 8
    random symbols exactly."""
    from rosetta.data.synthetic import accuracy
    from rosetta.jobs.run_config import load_config
    from rosetta.jobs.training import run_training

    # From length 2: the ten sources of length 1 all go to the test and
    # validation sets, so training would never see that length.
    flags = ["--lengths", "2-8", "--count", "3000", "--valid", "50", "--test", "100"]
    assert main(["task", "copy", "-o", str(tmp_path / "data"), *flags, "--bands"]) == 0
    smaller = {
        "model.encoder_layers": 1,
        "model.decoder_layers": 1,
        "model.d_model": 64,
        "model.d_ff": 128,
        "train.batch_tokens": 1000,
        "train.lr": 3e-3,
        "train.warmup_steps": 40,
        "train.max_steps": 300,
        "train.validate_every": 300,
        "train.threads": 2,
    }
    overrides = [f"{key}={value}" for key, value in smaller.items()]
    config = load_config(tmp_path / "data" / "config.yaml", overrides)
    run_training(config, tmp_path / "run")
    records = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    valid = [json.loads(r) for r in records if '"valid"' in r][-1]
    assert "bleu" not in valid and valid["exact"] >= 90.0, valid
    assert (
        json.loads((tmp_path / "run" / "checkpoints.json").read_text())["metric"]
        == "exact"
    )
    pairs = read_corpus(
        CorpusFiles(src=tmp_path / "data/test.src", tgt=tmp_path / "data/test.tgt")
    )
    translator = load_translator(tmp_path / "run", device="cpu")
    outputs = translator.translate([source for source, _ in pairs])
    score = accuracy(outputs, [target for _, target in pairs])
    assert score.exact >= 0.95, score


def test_addition_of_numbers_of_any_length_is_exact():
    """Column by column: Python's int() refuses strings of over 4,300 digits."""
    import random
    import sys

    rng = random.Random(0)
    for digits in (1, 7, 5000):
        source = draw_source("addition", digits, ALPHABET, rng)
        plus = source.index("+")
        limit = sys.get_int_max_str_digits()
        sys.set_int_max_str_digits(0)
        try:
            total = int("".join(source[:plus])) + int("".join(source[plus + 1 :]))
            expected = list(str(total))
        finally:
            sys.set_int_max_str_digits(limit)
        assert target_of("addition", source, ALPHABET) == expected
    assert target_of("addition", list("0+0"), ALPHABET) == ["0"]
    assert target_of("addition", list("05+03"), ALPHABET) == ["8"]
