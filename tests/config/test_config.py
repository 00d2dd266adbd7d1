import pytest

import rosetta.config.schema  # noqa: F401  (every section defined)
from rosetta.config.sections import Section
from rosetta.errors import RosettaError
from rosetta.families.rnn.config import RNNConfig
from rosetta.jobs.run_config import load_config
from tests.support.paths import ROOT

CONFIG = ROOT / "configs" / "multi30k-de-en-transformer.yaml"


def write(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return path


def test_bundled_config_loads_and_paths_are_resolved():
    config = load_config(CONFIG)
    assert config.model.d_model == 256 and config.model.encoder_layers == 3
    assert config.data.train.src.is_file()


@pytest.mark.parametrize(
    "path", sorted(CONFIG.parent.glob("*.yaml")), ids=lambda path: path.stem
)
def test_every_bundled_config_loads(path):
    """Files a config names may not exist yet (a teacher's translations)."""
    config = load_config(path)
    assert config.data.src_lang and config.model.arch


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


def test_a_typo_gets_a_suggestion_and_is_blamed_where_it_was_made(tmp_path):
    path = write(tmp_path, "data: {train: {tsv: x.tsv}}\ntrain: {warmup: 3}\n")
    with pytest.raises(RosettaError) as raised:
        load_config(path, ["train.lrate=1", "data.trian.src=x"])
    assert str(raised.value) == (
        f"{path}: invalid configuration: "
        "--set data.trian: unknown key (did you mean 'train'?); "
        "--set train.lrate: unknown key (did you mean 'lr'?); "
        "train.warmup: unknown key (did you mean 'warmup_steps'?)"
    )


def test_a_typo_made_only_by_set_does_not_blame_the_file():
    with pytest.raises(RosettaError) as raised:
        load_config(CONFIG, ["model.hidden_size=64"])
    assert str(raised.value) == (
        "--set model.hidden_size: unknown key for arch 'transformer' "
        "(it is a key of arch 'rnn')"
    )


def all_sections(base=Section):
    for section in base.__subclasses__():
        yield section
        yield from all_sections(section)


SECTIONS = [s for s in all_sections() if not s.__name__.startswith("_")]


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.__name__)
def test_every_configuration_key_is_described(section):
    """The configuration reference is generated from these descriptions."""
    undescribed = [
        name for name, field in section.model_fields.items() if not field.description
    ]
    assert undescribed == []


def test_the_sections_are_all_found():
    """Data, corpus files, tokenizer, four families' model sections and their
    four shared bases (every model's, the encoder-decoders', the attention
    models', the language models'), train, early stopping, decode, and the
    whole."""
    assert len(SECTIONS) == 15


def test_older_runs_name_the_cho_gru_notes():
    config = RNNConfig(arch="rnn", gru_variant="notes", rnn_impl="reference")
    assert config.gru_variant == "cho"


@pytest.mark.parametrize("value", ["{[}", "[", '"abc', "*a", "@x", "%", "\tx: &"])
def test_a_set_value_that_is_not_yaml_is_one_line(value):
    with pytest.raises(RosettaError) as raised:
        load_config(CONFIG, [f"model.d_model={value}"])
    message = str(raised.value)
    assert message.startswith("--set model.d_model: ") and "not a YAML value" in message
    assert "\n" not in message
