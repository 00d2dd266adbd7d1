"""The token store: encoded once, memory-mapped, refused when stale, never
left half-written; training from it equals training from pairs in memory."""

import errno
import gzip
import mmap
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from rosetta.data import text
from rosetta.data.batching import Example, encode_pairs
from rosetta.data.corpus import read_corpus
from rosetta.data.encoded_pairs import (
    EncodedPairs,
    SplitWriter,
    token_type,
)
from rosetta.data.store import MANIFEST_FILE, STORE_DIR
from rosetta.data.text import encode_text, read_text
from rosetta.errors import RosettaError
from rosetta.families import build_model, family_of
from rosetta.jobs.training import configure_torch, process_settings_kept
from rosetta.train.prepare import (
    PreparedData,
    PrepareOptions,
    prepare_data,
    prepare_text,
)
from rosetta.train.trainer import Trainer
from rosetta.train.training_task import TrainingSetup
from tests.support.paths import ROOT
from tests.support.toy import NAT, toy_config, toy_lm_config

CPU = torch.device("cpu")
REFRESH = PrepareOptions(refresh=True)  # as rosetta prepare asks
MULTI30K = os.path.join(ROOT, "data", "multi30k")


def is_mapped(array):
    """Whether ``array`` (or what it views) is a file mapped by ``map_array``."""
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)


def quiet(*_):
    pass


def test_the_store_holds_what_encoding_in_memory_gives(tmp_path):
    config, _ = toy_config(tmp_path, "data.max_len=6")
    data = prepare_data(config, tmp_path / "run", quiet)
    pairs = read_corpus(config.data.train)
    examples, report = encode_pairs(pairs, data.tokenizers, 6)
    assert report.dropped  # the length filter did drop some pairs
    assert list(data.train) == examples
    assert is_mapped(data.train.tokens["src"])
    manifest = (tmp_path / "run" / STORE_DIR / MANIFEST_FILE).read_text()
    assert f'"kept": {len(examples)}' in manifest


def test_token_ids_take_the_smallest_type_the_vocabulary_allows():
    assert token_type(8000) == np.uint16 and token_type(65536) == np.uint16
    assert token_type(65537) == np.int32


def test_a_changed_corpus_is_refused_and_prepare_encodes_it_again(tmp_path):
    config, _ = toy_config(tmp_path)
    run = tmp_path / "run"
    before = len(prepare_data(config, run, quiet).train)
    with (
        open(config.data.train.src, "a") as src,
        open(config.data.train.tgt, "a") as tgt,
    ):
        src.write("alpha beta\n")
        tgt.write("BETA ALPHA\n")
    with pytest.raises(RosettaError, match=r"changed since it was encoded.*prepare"):
        prepare_data(config, run, quiet)
    assert len(prepare_data(config, run, quiet, REFRESH).train) == before + 1


def test_a_file_only_touched_is_still_the_same_corpus(tmp_path):
    """A new modification time with the same bytes: the store is reused as
    it is (neither refused nor encoded again), holding the same pairs."""
    config, _ = toy_config(tmp_path)
    first = list(prepare_data(config, tmp_path / "run", quiet).train)
    arrays = sorted((tmp_path / "run" / STORE_DIR).glob("*.tokens"))
    assert arrays
    written = {path: path.stat().st_mtime_ns for path in arrays}
    os.utime(config.data.train.src, ns=(1, 1))
    said: list[str] = []
    again = list(prepare_data(config, tmp_path / "run", said.append).train)
    assert again == first
    assert not any("token store: encoding" in line for line in said), said
    assert {path: path.stat().st_mtime_ns for path in arrays} == written


def test_a_store_made_for_other_settings_is_refused(tmp_path):
    config, _ = toy_config(tmp_path)
    prepare_data(config, tmp_path / "run", quiet)
    shorter, _ = toy_config(tmp_path, "data.max_len=5")
    with pytest.raises(RosettaError, match="another max len"):
        prepare_data(shorter, tmp_path / "run", quiet)


def test_a_damaged_array_is_encoded_again_by_prepare(tmp_path):
    config, _ = toy_config(tmp_path)
    run = tmp_path / "run"
    first = list(prepare_data(config, run, quiet).train)
    tokens = run / STORE_DIR / "train.src.tokens"
    data = bytearray(tokens.read_bytes())
    data[0] ^= 0xFF  # same size: only the checksum tells
    tokens.write_bytes(bytes(data))
    assert list(prepare_data(config, run, quiet, REFRESH).train) == first


def test_training_never_starts_on_arrays_changed_in_place(tmp_path):
    config, _ = toy_config(tmp_path)
    run = tmp_path / "run"
    prepare_data(config, run, quiet)
    tokens = run / STORE_DIR / "train.src.tokens"
    data = bytearray(tokens.read_bytes())
    data[:8], data[8:16] = data[8:16], data[:8]  # ids swapped: same size
    tokens.write_bytes(bytes(data))
    with pytest.raises(RosettaError, match=r"src\.tokens is not what was encoded"):
        prepare_data(config, run, quiet)  # as training starts: no refresh


def test_a_corpus_edited_with_its_size_and_time_kept_is_refused(tmp_path):
    config, _ = toy_config(tmp_path)
    run = tmp_path / "run"
    prepare_data(config, run, quiet)
    path = Path(config.data.train.src)
    status = path.stat()
    text = path.read_text()
    path.write_text(text.replace("alpha", "gamma", 1))  # same length
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert path.stat().st_size == status.st_size
    with pytest.raises(RosettaError, match="changed since it was encoded"):
        prepare_data(config, run, quiet)


@pytest.mark.parametrize("manifest", ["[]", "{}", '{"format": 1', ""])
def test_a_damaged_manifest_is_one_line_naming_it(tmp_path, manifest):
    config, _ = toy_config(tmp_path)
    run = tmp_path / "run"
    prepare_data(config, run, quiet)
    (run / STORE_DIR / MANIFEST_FILE).write_text(manifest)
    with pytest.raises(RosettaError, match=r"manifest.json: not a store manifest") as e:
        prepare_data(config, run, quiet)
    assert "\n" not in str(e.value)


def test_a_failed_prepare_leaves_no_store_and_keeps_the_old_one(tmp_path, monkeypatch):
    config, _ = toy_config(tmp_path)
    run = tmp_path / "run"
    writes = []

    def disk_full(self, src, tgt):
        writes.append(len(src))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(SplitWriter, "add", disk_full)
    with pytest.raises(RosettaError, match="No space left on device"):
        prepare_data(config, run, quiet)
    assert writes and not (run / STORE_DIR).exists()
    assert not [p for p in run.iterdir() if p.name.startswith(f".{STORE_DIR}")]

    monkeypatch.undo()
    kept = list(prepare_data(config, run, quiet).train)
    (run / STORE_DIR / "train.src.tokens").write_bytes(b"")  # make it stale
    monkeypatch.setattr(SplitWriter, "add", disk_full)
    with pytest.raises(RosettaError, match="No space left"):
        prepare_data(config, run, quiet, REFRESH)
    monkeypatch.undo()
    (run / STORE_DIR / "train.src.tokens").unlink()  # the old store is still there
    assert (run / STORE_DIR / MANIFEST_FILE).is_file()
    assert list(prepare_data(config, run, quiet, REFRESH).train) == kept


def test_the_leftovers_of_a_killed_prepare_are_never_used(tmp_path):
    config, _ = toy_config(tmp_path)
    run = tmp_path / "run"
    leftover = run / f".{STORE_DIR}.12345.tmp"
    leftover.mkdir(parents=True)
    (leftover / "train.src.tokens").write_bytes(b"\0" * 8)  # no manifest
    data = prepare_data(config, run, quiet)
    assert len(data.train) > 0 and not leftover.exists()


def test_subsets_keep_their_order_and_compose():
    pairs = EncodedPairs.from_examples([Example([i], [i, i]) for i in range(6)])
    odd = pairs.subset(np.arange(6) % 2 == 1)
    assert [e.src for e in odd] == [[1], [3], [5]]
    last = odd.subset(np.array([False, True, True]))
    assert [e.src for e in last] == [[3], [5]] and last.tgt_lengths.tolist() == [2, 2]


def multi30k_config(tmp_path):
    """The first 3,000 pairs of Multi30k (Elliott et al. 2016), a tiny model."""
    for side in ("de", "en"):
        with gzip.open(os.path.join(MULTI30K, f"train.{side}.gz"), "rt") as handle:
            lines = [next(handle) for _ in range(3000)]
        (tmp_path / f"train.{side}").write_text("".join(lines))
    config, _ = toy_config(
        tmp_path,
        f"data.train.src={tmp_path / 'train.de'}",
        f"data.train.tgt={tmp_path / 'train.en'}",
        "train.max_steps=50",
        "train.max_epochs=null",
        "train.batch_tokens=600",
    )
    return config


def train_fifty_updates(config, data, run_dir):
    run_dir.mkdir()
    with process_settings_kept():  # threads, determinism: the caller's again after
        configure_torch(config)
        family = family_of(config.model)
        sizes = len(data.tokenizers.src), len(data.tokenizers.tgt)
        model = build_model(config.model, *sizes)
        setup = TrainingSetup(config, model, data, CPU, run_dir, 0, 1, quiet)
        task = family.training_task(setup)
        batches = task.epoch_batches(0)
        Trainer(config, run_dir, model, task, CPU).train()
    return batches, model.state_dict()


def test_training_from_the_store_equals_training_from_pairs_in_memory(tmp_path):
    config = multi30k_config(tmp_path)
    stored = prepare_data(config, tmp_path / "stored", quiet)
    pairs = read_corpus(config.data.train)
    examples, _ = encode_pairs(pairs, stored.tokenizers, config.data.max_len)
    valid, _ = encode_pairs(stored.valid_pairs, stored.tokenizers, config.data.max_len)
    in_memory = PreparedData(
        stored.tokenizers,
        EncodedPairs.from_examples(examples),
        stored.valid_pairs,
        EncodedPairs.from_examples(valid),
    )
    batches_a, weights_a = train_fifty_updates(config, stored, tmp_path / "a")
    batches_b, weights_b = train_fifty_updates(config, in_memory, tmp_path / "b")
    assert [b.tolist() for b in batches_a] == [b.tolist() for b in batches_b]
    assert all(torch.equal(weights_a[k], weights_b[k]) for k in weights_a)


@pytest.mark.parametrize("kind", ["char", "sentencepiece"])
@pytest.mark.parametrize("block_bytes", [100, 1 << 20])  # many blocks, or one
def test_a_language_models_text_is_stored_once_and_mapped(
    tmp_path, monkeypatch, kind, block_bytes
):
    monkeypatch.setattr(text, "BLOCK_BYTES", block_bytes)
    overrides = [f"tokenizer.kind={kind}"]
    if kind == "sentencepiece":
        overrides.append("tokenizer.vocab_size=200")
    config, _ = toy_lm_config(tmp_path, *overrides)
    first = prepare_text(config, tmp_path / "run", quiet)
    tokenizer = first.tokenizers.tgt
    for split, files in (("train", config.data.train), ("valid", config.data.valid)):
        expected = encode_text(tokenizer, read_text(files.text))
        assert getattr(first, split).tolist() == expected
    again = prepare_text(config, tmp_path / "run", quiet)
    assert is_mapped(again.train)
    assert np.array_equal(again.train, first.train)


def test_a_blank_text_is_refused(tmp_path):
    config, _ = toy_lm_config(tmp_path)
    config.data.train.text.write_text(" \n\n\t\n")
    with pytest.raises(RosettaError, match="the text is empty"):
        prepare_text(config, tmp_path / "run", quiet)
    assert not (tmp_path / "run" / STORE_DIR).exists()


def test_a_changed_text_is_refused(tmp_path):
    config, _ = toy_lm_config(tmp_path)
    prepare_text(config, tmp_path / "run", quiet)
    config.data.train.text.write_text("To be, or not to be.\n" * 600)
    with pytest.raises(RosettaError, match="changed since it was encoded"):
        prepare_text(config, tmp_path / "run", quiet)
    assert len(prepare_text(config, tmp_path / "run", quiet, REFRESH).train) == 12600


def test_nat_fertilities_are_found_once_then_mapped(tmp_path, monkeypatch):
    from rosetta.families.nat import fertilities as module

    config, _ = toy_config(tmp_path, model=NAT)
    run = tmp_path / "run"
    data = prepare_data(config, run, quiet)
    train, valid = (
        pairs.subset(module.fits(pairs.src_lengths, pairs.tgt_lengths, 3))
        for pairs in (data.train, data.valid)
    )
    found = module.stored_fertilities(train, valid, 3, run, quiet)
    expected = module.reference_fertilities([*train, *valid], 3, run, quiet)
    assert [found[0][i] for i in range(len(train))] == expected[: len(train)]
    assert [found[1][i] for i in range(len(valid))] == expected[len(train) :]

    def never(*_):
        raise AssertionError("the fertilities were found again")

    monkeypatch.setattr(module, "reference_fertilities", never)
    again = module.stored_fertilities(train, valid, 3, run, quiet)
    assert is_mapped(again[0].values)
    with pytest.raises(AssertionError, match="found again"):  # another limit
        module.stored_fertilities(train, valid, 4, run, quiet)


def test_a_nats_preparation_aligns_and_training_only_maps(tmp_path, monkeypatch):
    """``rosetta prepare`` (or the first training process) aligns; every
    training process after it maps what it stored."""
    from rosetta.families.nat import fertilities as module
    from rosetta.families.nat.training import prepare_nat

    config, _ = toy_config(tmp_path, model=NAT)
    run = tmp_path / "run"
    prepared = prepare_nat(config, run, quiet)
    assert (run / module.ALIGNMENTS_FILE).is_file()

    def never(*_):
        raise AssertionError("a training process aligned again")

    monkeypatch.setattr(module, "reference_fertilities", never)
    again = prepare_nat(config, run, quiet)
    assert is_mapped(again.train_fertilities.values)
    assert len(again.pairs.train) == len(prepared.pairs.train)
    sizes = [len(again.train_fertilities[i]) for i in range(len(again.pairs.train))]
    assert sizes == again.pairs.train.src_lengths.tolist()


def test_a_vocabulary_smaller_than_asked_is_said(tmp_path):
    config, _ = toy_config(tmp_path, "tokenizer.vocab_size=5000")
    said: list[str] = []
    prepare_data(config, tmp_path / "run", said.append)
    assert any("counting words (at most 5,000, separate)" in line for line in said)
    assert any("fewer than tokenizer.vocab_size (5,000)" in line for line in said)
