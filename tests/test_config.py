from pathlib import Path

import pytest

from rosetta.config import load_config
from rosetta.errors import RosettaError

CONFIG = Path(__file__).parents[1] / "configs" / "multi30k-de-en-transformer.yaml"


def write(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return path


def test_bundled_config_loads_and_paths_are_resolved():
    config = load_config(CONFIG)
    assert config.model.d_model == 256 and config.model.encoder_layers == 3
    assert config.data.train.src.is_file()


def test_override_changes_a_value():
    config = load_config(CONFIG, ["train.lr=3e-4", "model.dropout=0.3"])
    assert config.train.lr == 3e-4 and config.model.dropout == 0.3


def test_unknown_key_is_named(tmp_path):
    path = write(tmp_path, "data: {train: {tsv: x.tsv}}\nmodel: {layerz: 3}\n")
    with pytest.raises(RosettaError, match=r"model\.layerz: unknown key"):
        load_config(path)


def test_unknown_override_is_named():
    with pytest.raises(RosettaError, match=r"train\.lrate: unknown key"):
        load_config(CONFIG, ["train.lrate=1"])


@pytest.mark.parametrize(
    ("override", "pattern"),
    [
        ("model.d_model=-4", r"model\.d_model: .*greater than 0"),
        ("model.heads=3", r"heads \(3\) must divide d_model \(256\)"),
        ("train.lr=fast", r"train\.lr: .*number"),
        ("tokenizer.kind=chars", r"tokenizer\.kind: .*sentencepiece"),
        ("tokenizer.joint=false", "share_embeddings needs one joint vocabulary"),
    ],
)
def test_bad_values_are_explained(override, pattern):
    with pytest.raises(RosettaError, match=pattern):
        load_config(CONFIG, [override])


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(RosettaError, match="not found"):
        load_config(tmp_path / "nope.yaml")
    with pytest.raises(RosettaError, match="not valid YAML"):
        load_config(write(tmp_path, "data: [unclosed"))


def test_corpus_needs_one_layout(tmp_path):
    with pytest.raises(RosettaError, match="either both 'src' and 'tgt'"):
        load_config(write(tmp_path, "data: {train: {src: a.txt}}\n"))
