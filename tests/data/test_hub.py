"""Corpora from the Hugging Face hub, read through ``datasets`` itself from
datasets this test writes locally (CI has no network): the same store as the
same pairs in files, the usual clear errors, and a changed dataset refused."""

import sys

import datasets
import pytest

from rosetta.data.corpus import read_corpus
from rosetta.errors import RosettaError
from rosetta.jobs.run_config import load_config
from rosetta.train.prepare import prepare_data
from tests.support.toy import write_corpus


def quiet(*_):
    pass


def lines(path):
    return path.read_text().splitlines()


def save_translations(folder, splits, languages=("de", "en")):
    """A DatasetDict of {split: (source file, target file)} in the layout of
    WMT on the hub: one ``translation`` column of {language: sentence}."""
    src_lang, tgt_lang = languages
    datasets.DatasetDict(
        {
            split: datasets.Dataset.from_dict(
                {
                    "translation": [
                        {src_lang: s, tgt_lang: t}
                        for s, t in zip(lines(src), lines(tgt), strict=True)
                    ]
                }
            )
            for split, (src, tgt) in splits.items()
        }
    ).save_to_disk(str(folder))


def hub_config(tmp_path, train, valid, *overrides):
    path = tmp_path / "hub.yaml"
    path.write_text(
        f"""
data:
  train: {train}
  valid: {valid}
  src_lang: de
  tgt_lang: en
tokenizer: {{kind: word, joint: false}}
model: {{encoder_layers: 1, decoder_layers: 1, d_model: 32, heads: 2, d_ff: 64,
         share_embeddings: false}}
"""
    )
    return load_config(path, list(overrides))


def test_a_hub_dataset_gives_the_store_its_files_give(tmp_path):
    train = write_corpus(tmp_path, 300, seed=1)
    valid = write_corpus(tmp_path, 20, seed=2)
    save_translations(tmp_path / "wmt", {"train": train, "validation": valid})
    from_hub = hub_config(
        tmp_path, "{hf: wmt, split: train}", "{hf: wmt, split: validation}"
    )
    from_files = hub_config(
        tmp_path,
        f"{{src: {train[0]}, tgt: {train[1]}}}",
        f"{{src: {valid[0]}, tgt: {valid[1]}}}",
    )
    hub_data = prepare_data(from_hub, tmp_path / "hub-run", quiet)
    file_data = prepare_data(from_files, tmp_path / "file-run", quiet)
    assert len(hub_data.train) == 300
    assert list(hub_data.train) == list(file_data.train)
    assert list(hub_data.valid) == list(file_data.valid)
    assert hub_data.valid_pairs == file_data.valid_pairs


def test_two_plain_columns_are_read_by_name(tmp_path):
    datasets.Dataset.from_dict(
        {"fr": ["bonjour", "merci"], "en": ["hello", "thanks"], "id": [1, 2]}
    ).save_to_disk(str(tmp_path / "plain"))
    config = hub_config(
        tmp_path, "{hf: plain, columns: [fr, en]}", "{hf: plain, columns: [fr, en]}"
    )
    assert read_corpus(config.data.train) == [("bonjour", "hello"), ("merci", "thanks")]


@pytest.mark.parametrize(
    ("train", "expected"),
    [
        ("{hf: wmt, split: test}", "choose a split ('split'): train"),
        ("{hf: wmt, split: train, columns: [fr, en]}", "row 0: its translation has"),
        ("{hf: no-such-folder-or-dataset-xyz, split: train}", "cannot be loaded"),
    ],
)
def test_hub_problems_are_one_clear_error(tmp_path, train, expected, monkeypatch):
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)  # no network here
    save_translations(tmp_path / "wmt", {"train": write_corpus(tmp_path, 5, seed=1)})
    config = hub_config(tmp_path, train, "{hf: wmt, split: train}")
    with pytest.raises(
        RosettaError, match=expected.replace("(", r"\(").replace(")", r"\)")
    ):
        read_corpus(config.data.train)


def test_without_the_datasets_package_the_error_says_what_to_install(
    tmp_path, monkeypatch
):
    config = hub_config(tmp_path, "{hf: wmt14, split: train}", "{hf: wmt14}")
    monkeypatch.setitem(sys.modules, "datasets", None)  # import fails
    with pytest.raises(RosettaError, match=r"pip install 'rosetta-nmt\[datasets\]'"):
        read_corpus(config.data.train)


def test_hub_keys_belong_to_hf(tmp_path):
    with pytest.raises(RosettaError, match="'split' goes with 'hf'"):
        hub_config(tmp_path, "{tsv: a.tsv, split: train}", "{hf: wmt}")


def test_a_changed_dataset_is_refused(tmp_path):
    save_translations(tmp_path / "wmt", {"train": write_corpus(tmp_path, 50, seed=1)})
    config = hub_config(tmp_path, "{hf: wmt, split: train}", "{hf: wmt, split: train}")
    prepare_data(config, tmp_path / "run", quiet)
    save_translations(tmp_path / "wmt", {"train": write_corpus(tmp_path, 60, seed=3)})
    with pytest.raises(RosettaError, match="changed since it was encoded"):
        prepare_data(config, tmp_path / "run", quiet)


@pytest.mark.parametrize(
    ("columns", "expected"),
    [
        ({"fr": ["bonjour", None], "en": ["hello", "thanks"]}, "row 1: its source"),
        ({"fr": ["bonjour", "merci"], "en": [1, 2]}, "row 0: its target is 1"),
    ],
    ids=["a None cell", "integers"],
)
def test_a_row_that_is_not_two_strings_is_named(tmp_path, columns, expected):
    datasets.Dataset.from_dict(columns).save_to_disk(str(tmp_path / "plain"))
    config = hub_config(
        tmp_path, "{hf: plain, columns: [fr, en]}", "{hf: plain, columns: [fr, en]}"
    )
    with pytest.raises(RosettaError, match=expected):
        read_corpus(config.data.train)


def test_a_translation_missing_a_language_is_named(tmp_path):
    datasets.Dataset.from_dict(
        {"translation": [{"de": "hallo", "en": "hello"}, {"de": "danke", "en": None}]}
    ).save_to_disk(str(tmp_path / "wmt"))
    config = hub_config(tmp_path, "{hf: wmt}", "{hf: wmt}")
    with pytest.raises(RosettaError, match="row 1: its target is None"):
        read_corpus(config.data.train)
