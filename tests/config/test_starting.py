"""``train --init RUN``: the starting run supplies the task, the model section
and the tokenizers a configuration leaves out; a key the configuration writes
(in the file or with ``--set``) that differs from the starting run's is
refused in one line naming that key, before anything is written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from rosetta.cli import main
from rosetta.errors import RosettaError
from rosetta.jobs.run_config import load_config
from rosetta.train.fine_tuning import starting_checkpoint
from tests.support.toy import write_corpus

# keys the starting run (tests/support/toy.py's transformer, word tokenizer) decides:
# its value, and another that a configuration might write
KEYS = {
    "task": ("translate", "lm"),
    "model.arch": ("transformer", "rnn"),
    "model.d_model": (32, 64),
    "model.encoder_layers": (1, 2),
    "model.decoder_layers": (1, 3),
    "model.heads": (2, 4),
    "model.dropout": (0.1, 0.3),
    "model.share_embeddings": (False, True),
    "tokenizer.kind": ("word", "sentencepiece"),
    "tokenizer.joint": (False, True),
    "tokenizer.vocab_size": (8000, 100),
}
NAMED = re.compile(r"train\.init \S+: (\S+) is ")


@pytest.fixture(scope="module")
def start(toy_run) -> Path:
    return toy_run("transformer")


def finetune_file(folder: Path, written: dict[str, object]) -> Path:
    """A fine-tuning configuration: data, a short schedule, and ``written``
    (dotted keys) in its sections."""
    folder.mkdir(parents=True, exist_ok=True)
    src, tgt = write_corpus(folder, 40, seed=3)
    raw: dict = {"data": {"train": {"src": src.name, "tgt": tgt.name}}}
    raw["train"] = {"max_steps": 1, "max_epochs": None, "threads": 1}
    for dotted, value in written.items():
        *sections, key = dotted.split(".")
        node = raw
        for section in sections:
            node = node.setdefault(section, {})
        node[key] = value
    path = folder / "finetune.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def vocabulary_size(run: Path) -> int:
    """The number of ids the run's tokenizers have (one number: the toy
    run's two vocabularies are the same size)."""
    from rosetta.data.tokenizer import TokenizerPair
    from rosetta.runs import checkpoint as ckpt

    meta = ckpt.read_meta(ckpt.resolve_checkpoint(run), tensors=False)
    pair = TokenizerPair.from_dict(meta["tokenizers"])
    assert len(pair.src) == len(pair.tgt)
    return len(pair.src)


def test_the_vocabulary_size_quoted_is_the_starting_models_own(start, tmp_path, capsys):
    """The starting run's ``tokenizer.vocab_size`` is only what was asked for
    (here the default, 8000, as in every imported model); its vocabulary
    has far fewer ids. A refusal quotes those, and a configuration that
    writes them, or what was asked for, agrees."""
    size = vocabulary_size(start)
    assert size != 8000
    config = finetune_file(tmp_path, {})
    command = ["train", str(config), "-o", str(tmp_path / "x"), "--init", str(start)]
    assert main([*command, "--set", "tokenizer.vocab_size=100"]) == 2
    error = capsys.readouterr().err
    said = f"tokenizer.vocab_size is {size} (its vocabulary's size) there and 100"
    assert said in error and "8000" not in error, error
    for agreeing in (size, 8000):
        init = f"train.init={start}"
        loaded = load_config(config, [f"tokenizer.vocab_size={agreeing}", init])
        assert loaded.tokenizer.vocab_size == agreeing
        assert starting_checkpoint(loaded) is not None  # checked again there


def as_set(written: dict[str, object]) -> list[str]:
    return [f"{key}={json.dumps(value)}" for key, value in written.items()]


@pytest.mark.parametrize("where", ["file", "--set"])
@pytest.mark.parametrize("key", list(KEYS))
def test_a_written_key_that_differs_is_refused_naming_it(
    start, tmp_path, capsys, key, where
):
    theirs, ours = KEYS[key]
    written = {key: ours}
    config = finetune_file(tmp_path, written if where == "file" else {})
    overrides = [flag for o in as_set(written) for flag in ("--set", o)]
    run = tmp_path / "tuned"
    command = ["train", str(config), "-o", str(run), "--init", str(start)]
    assert main([*command, *(overrides if where == "--set" else [])]) == 2
    error = capsys.readouterr().err
    assert len(error.splitlines()) == 1, error
    assert NAMED.search(error)[1] == key, error
    where = f"in {config}" if where == "file" else "with --set"
    if key == "tokenizer.vocab_size":  # what its vocabulary has, not asked for
        theirs = f"{vocabulary_size(start)} (its vocabulary's size)"
    else:
        theirs = repr(theirs)
    assert f"{key} is {theirs} there and {ours!r} {where}" in error
    assert "a fine-tuning configuration may leave out task, model and" in error
    assert not run.exists()


def test_the_changed_key_is_named_not_a_default(start, tmp_path, capsys):
    """Only a key the user wrote is compared: not one a filled-in default
    (the transformer's activation) makes differ."""
    config = finetune_file(tmp_path, {})
    command = ["train", str(config), "-o", str(tmp_path / "x"), "--init", str(start)]
    assert main([*command, "--set", "model.d_model=256"]) == 2
    error = capsys.readouterr().err
    assert "model.d_model is 32 there and 256 with --set" in error
    assert "activation" not in error


def test_a_key_changed_with_set_is_named_before_one_the_file_holds(
    start, tmp_path, capsys
):
    """A copy of a full configuration (a ``model`` section the starting run
    differs from) with the one key the user changed: that key is named."""
    ours = KEYS["model.dropout"][1]
    config = finetune_file(tmp_path, {"model.dropout": ours})
    command = ["train", str(config), "-o", str(tmp_path / "x"), "--init", str(start)]
    assert main([*command, "--set", "model.d_model=256"]) == 2
    error = capsys.readouterr().err
    assert "model.d_model is 32 there and 256 with --set" in error
    assert "dropout" not in error


def test_keys_that_agree_are_accepted_and_the_rest_comes_from_the_start(
    start, tmp_path, capsys
):
    agreeing = {key: value for key, (value, _) in KEYS.items()}
    agreeing["model.dropout"] = "1.0e-1"  # as YAML 1.1 reads it: a string
    config = finetune_file(tmp_path, {"model.d_model": 32, "tokenizer.kind": "word"})
    run = tmp_path / "tuned"
    command = ["prepare", str(config), "-o", str(run), "--set", f"train.init={start}"]
    assert main([*command, *[f for o in as_set(agreeing) for f in ("--set", o)]]) == 0
    capsys.readouterr()
    assert (
        json.loads((run / "tokenizers.json").read_text())["tokenizers"]
        == (json.loads((start / "tokenizers.json").read_text())["tokenizers"])
    )


@given(
    choices=st.dictionaries(
        st.sampled_from(list(KEYS)), st.booleans(), min_size=1, max_size=5
    ),
    in_file=st.sets(st.sampled_from(list(KEYS))),
)
def test_any_mix_of_keys_is_refused_exactly_when_one_differs(
    start, tmp_path_factory, choices, in_file
):
    """Keys drawn with the starting run's value or another, each written in
    the file or with ``--set``: refused, naming a key that differs, exactly
    when one does; otherwise the configuration is the starting run's."""
    written = {key: KEYS[key][differs] for key, differs in choices.items()}
    by_file = {key: value for key, value in written.items() if key in in_file}
    by_set = {key: value for key, value in written.items() if key not in in_file}
    config = finetune_file(tmp_path_factory.mktemp("mix"), by_file)
    overrides = [*as_set(by_set), f"train.init={start}"]
    differing = [key for key, differs in choices.items() if differs]
    if differing:
        with pytest.raises(RosettaError) as refused:
            load_config(config, overrides)
        assert NAMED.search(str(refused.value))[1] in differing
        return
    loaded = load_config(config, overrides)
    starting = starting_checkpoint(loaded)[1]["config"]
    assert loaded.task == starting["task"]
    assert loaded.model.model_dump(mode="json") == starting["model"]
    assert loaded.tokenizer.model_dump(mode="json") == starting["tokenizer"]


def test_the_starting_weights_are_hashed_before_any_folder_and_when_loaded(
    start, tmp_path, capsys, monkeypatch
):
    """Reading the starting run's configuration checks its metadata's seal
    only; its weights are hashed where they are checked before any folder is
    made, and where they are loaded: twice, not once per reading."""
    import rosetta.runs.integrity as integrity

    hashed: list[Path] = []
    real = integrity.sha256_file

    def counted(path, *args, **kwargs):
        if Path(path).name == "model.safetensors" and start in Path(path).parents:
            hashed.append(Path(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(integrity, "sha256_file", counted)
    config = finetune_file(tmp_path, {})
    command = [
        "train",
        str(config),
        "-o",
        str(tmp_path / "tuned"),
        "--init",
        str(start),
    ]
    assert main(command) == 0
    assert len(hashed) == 2
