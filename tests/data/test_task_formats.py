"""The ways a synthetic pair can be written: padded additions, index hints
and operands of their own lengths, by hand and over whole written tasks."""

import pytest

from rosetta.cli import main
from rosetta.data.synthetic import TaskSpec, target_of, write_task
from rosetta.data.task_formats import formatter, hinted, padded
from rosetta.errors import RosettaError

DIGITS = list("0123456789")


def words(text):
    return text.split()


@pytest.mark.parametrize(
    ("task", "source", "written"),
    [
        ("addition", "4 7 + 1 8 5", ("0 4 7 + 1 8 5", "0 2 3 2")),
        ("addition", "9 + 9 9 9", ("0 0 9 + 9 9 9", "1 0 0 8")),
        ("addition-lsb", "7 4 + 5 8 1", ("7 4 0 + 5 8 1", "2 3 2 0")),
        ("addition-reversed", "4 7 + 1 8 5", ("0 4 7 + 1 8 5", "2 3 2 0")),
    ],
)
def test_padding_puts_every_significance_in_one_place(task, source, written):
    source = words(source)
    found = padded(task, source, target_of(task, source, DIGITS))
    assert (" ".join(found[0]), " ".join(found[1])) == written


@pytest.mark.parametrize(
    ("task", "source", "written"),
    [
        ("copy", "c a b", ("h0 c h1 a h2 b", "h0 c h1 a h2 b")),
        ("reverse", "c a b", ("h0 c h1 a h2 b", "h2 b h1 a h0 c")),
        ("sort", "c a b a", ("h0 c h1 a h2 b h3 a", "h1 a h3 a h2 b h0 c")),
        ("duplicate", "c a", ("h0 c h1 a", "h0 c h1 a h0 c h1 a")),
        ("addition", "4 7 + 8 5", ("h1 4 h0 7 + h1 8 h0 5", "h2 1 h1 3 h0 2")),
        ("addition-lsb", "7 4 + 5", ("h0 7 h1 4 + h0 5", "h0 2 h1 5")),
        ("addition-reversed", "4 7 + 5", ("h1 4 h0 7 + h0 5", "h0 2 h1 5")),
    ],
)
def test_index_hints_name_each_symbols_place_or_significance(task, source, written):
    alphabet = DIGITS if task.startswith("addition") else list("abc")
    source = words(source)
    found = hinted(task, source, target_of(task, source, alphabet), offset=0)
    assert (" ".join(found[0]), " ".join(found[1])) == written


def test_training_hints_start_anywhere_in_their_range_and_tests_at_zero(tmp_path):
    spec = TaskSpec(
        "reverse",
        lengths=(2, 3),
        count=300,
        valid=10,
        test=10,
        bands=((5, 6),),
        format="hints",
        hint_range=8,
    )
    write_task(spec, tmp_path)

    def hints(name):
        lines = (tmp_path / f"{name}.src").read_text().splitlines()
        return [[int(t[1:]) for t in line.split()[::2]] for line in lines]

    train = hints("train")
    assert all(h == list(range(h[0], h[0] + len(h))) for h in train)
    assert {h[0] for h in train} == set(range(0, 7))  # offsets 0 .. 8 − 2
    assert max(h[-1] for h in train) == 7  # every hint up to the range is trained
    assert all(h[0] == 0 for name in ("valid", "test", "test-5-6") for h in hints(name))
    # with the hints taken out, the pairs are the task's
    for name in ("train", "test-5-6"):
        sources = (tmp_path / f"{name}.src").read_text().splitlines()
        targets = (tmp_path / f"{name}.tgt").read_text().splitlines()
        for source, target in zip(sources, targets, strict=True):
            plain = source.split()[1::2]
            assert target.split()[1::2] == target_of("reverse", plain, list("abc"))


def test_independent_operands_take_their_lengths_each_from_the_band(tmp_path):
    spec = TaskSpec(
        "addition",
        lengths=(1, 4),
        count=400,
        valid=10,
        test=10,
        bands=((6, 8),),
        operands="independent",
    )
    write_task(spec, tmp_path)
    pairs = set()
    for name, band in (("train", (1, 4)), ("test-6-8", (6, 8))):
        for line in (tmp_path / f"{name}.src").read_text().splitlines():
            left, right = line.split(" + ")
            lengths = len(left.split()), len(right.split())
            assert all(band[0] <= n <= band[1] for n in lengths)
            pairs.add(lengths)
    assert len(pairs) > 16  # unequal lengths, not only (n, n)


def test_formats_a_task_cannot_take_are_clear_errors(tmp_path):
    cases = [
        (TaskSpec("copy", format="padded"), "padded is for additions"),
        (TaskSpec("copy", operands="independent"), "for additions"),
        (TaskSpec("copy", format="hints", hint_range=100), "at least 200"),
        (TaskSpec("copy", format="hints", alphabet=["h2", "b"]), "cannot hold one"),
        (TaskSpec("copy", format="fancy"), "unknown format"),
    ]
    for spec, message in cases:
        with pytest.raises(RosettaError, match=message):
            write_task(spec, tmp_path / "never")


def test_the_command_writes_a_hinted_task_whose_config_fits_it(tmp_path, capsys):
    from rosetta.jobs.run_config import load_config

    out = tmp_path / "task"
    flags = ["--lengths", "1-3", "--bands", "4-6", "--count", "50", "--valid", "5"]
    assert (
        main(
            [
                "task",
                "addition-lsb",
                "-o",
                str(out),
                *flags,
                "--test",
                "5",
                "--format",
                "hints",
                "--operands",
                "independent",
                "--hint-range",
                "12",
            ]
        )
        == 0
    )
    longest = max(
        len(line.split())
        for path in out.glob("*.*")
        if path.suffix in (".src", ".tgt")
        for line in path.read_text().splitlines()
    )
    config = load_config(out / "config.yaml")
    assert config.model.max_positions >= longest + 1  # with <eos>
    assert "h0" in (out / "train.tgt").read_text().split()


def test_the_written_config_keeps_every_training_pair(tmp_path):
    """Duplicate with index hints writes targets four times the source
    length; the config's ``data.max_len`` must keep the longest of them
    (the default of 128 tokens dropped a quarter of the 1-40 pairs)."""
    from rosetta.jobs.run_config import load_config

    out = tmp_path / "task"
    flags = ["--lengths", "1-40", "--bands", "--count", "200", "--valid", "5"]
    assert main(["task", "duplicate", "-o", str(out), *flags, "--format", "hints"]) == 0
    longest = max(
        len(line.split())
        for split in ("train", "valid", "test")
        for side in ("src", "tgt")
        for line in (out / f"{split}.{side}").read_text().splitlines()
    )
    assert longest > 128
    config = load_config(out / "config.yaml")
    assert config.data.max_len >= longest + 1  # with <eos>


def test_a_pair_is_written_the_same_whoever_draws_it():
    write = formatter("copy", "hints", 10)
    assert write(["a"], ["a"], None) == (["h0", "a"], ["h0", "a"])
    assert formatter("copy", "plain", 10)(["a"], ["a"], None) == (["a"], ["a"])


@pytest.mark.parametrize("task", ["addition-lsb", "addition-reversed"])
def test_the_written_addition_config_places_digits_where_they_hold(tmp_path, task):
    """``addition-lsb`` trains ``abacus-alibi`` (digit places are
    significances), and its table holds the longest test sum at the largest
    training offset: a training forward at that offset runs."""
    import torch

    from rosetta.families.transformer.positions.numbers import shifted
    from rosetta.jobs.run_config import load_config
    from tests.support.transformers import transformer

    out = tmp_path / "task"
    flags = ["--lengths", "1-5", "--bands", "6-30", "--count", "50", "--valid", "5"]
    assert main(["task", task, "-o", str(out), *flags, "--test", "5"]) == 0
    model = load_config(out / "config.yaml").model
    if task != "addition-lsb":
        assert model.positions == "alibi"
        return
    assert model.positions == "abacus-alibi"
    ids = torch.arange(16)
    digits = (ids >= 4) & (ids < 14)  # 0-3 the specials, 14 the plus sign
    sizes = model.model_dump(exclude={"arch"})
    built = transformer(16, 16, (digits, digits), **sizes).train()
    src = torch.tensor([[5] * 30 + [14] + [6] * 30 + [3]])  # two 30-digit numbers
    tgt_in = torch.tensor([[2] + [7] * 31])  # <bos> and a 31-digit sum
    largest = torch.tensor([[model.number_offset]])
    built.training_positions = lambda s, m, t: (
        shifted(built.encoder.positions.numbers(s, real=m), largest),
        shifted(built.decoder.positions.numbers(t), largest),
    )
    assert built(src, src > 0, tgt_in).shape == (1, 32, model.d_model)
