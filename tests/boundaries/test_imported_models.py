"""Folders of other toolkits brought in: a MarianMT folder given to
``rosetta import hf`` is untrusted input. Every value it reads
(configuration, generation settings, tokenizer files, weights) is checked,
and what it would otherwise cast, drop, guess or allocate without bound is
refused in one line naming the file and the key or tensor, exit status 2,
nothing written; and ``rosetta export hf`` writes what transformers loads
as the same model."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from benchmarks.marian_model import make_marian
from hypothesis import given
from hypothesis import strategies as st
from safetensors.torch import load_file, save_file

from rosetta.cli import main
from rosetta.errors import RosettaError
from rosetta.families.transformer.hf.convert import imported_ids
from rosetta.families.transformer.hf.folder import read_marian_folder
from rosetta.jobs.loading import load_translator
from rosetta.runtime import resources
from rosetta.search.options import SearchOptions

transformers = pytest.importorskip("transformers")
WEIGHTS = "model.safetensors"
SHARED = "model.shared.weight"
DEEP = 100_000  # far beyond any parser's recursion


@pytest.fixture(scope="module")
def marian(tmp_path_factory) -> Path:
    return make_marian(tmp_path_factory.mktemp("marian") / "opus-mt-de-en")


def edited(
    marian: Path,
    folder: Path,
    config: dict[str, Any] | None = None,
    drop: tuple[str, ...] = (),
    tensors: dict[str, torch.Tensor] | None = None,
) -> Path:
    """A copy of ``marian`` with ``config.json`` keys set (``drop``: removed)
    and ``tensors`` added to (or replacing) its weights."""
    shutil.copytree(marian, folder)
    if config is not None or drop:
        settings = json.loads((folder / "config.json").read_text())
        settings |= config or {}
        for key in drop:
            del settings[key]
        (folder / "config.json").write_text(json.dumps(settings))
    if tensors is not None:
        stored = load_file(str(folder / WEIGHTS)) | tensors
        save_file(stored, str(folder / WEIGHTS))
    return folder


def refused(folder: Path, tmp_path: Path, capsys) -> str:
    """The one line ``rosetta import hf`` refuses ``folder`` with; nothing
    is written."""
    capsys.readouterr()
    output = tmp_path / "out" / "run"
    assert main(["import", "hf", str(folder), "-o", str(output)]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1, error
    assert not output.exists()
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    return error


def shared_of(marian: Path) -> torch.Tensor:
    return load_file(str(marian / WEIGHTS))[SHARED]


@pytest.mark.parametrize(
    ("name", "dtype"),
    [
        (SHARED, torch.int32),
        (SHARED, torch.bool),
        ("model.encoder.layers.0.fc1.weight", torch.int64),
        ("model.decoder.layers.1.self_attn.q_proj.bias", torch.uint8),
        ("final_logits_bias", torch.complex64),
        ("model.encoder.layers.1.final_layer_norm.weight", torch.int8),
    ],
)
def test_a_weight_that_is_not_floating_point_is_refused(
    marian, tmp_path, capsys, name, dtype
):
    tensor = load_file(str(marian / WEIGHTS))[name]
    folder = edited(marian, tmp_path / "model", tensors={name: tensor.to(dtype)})
    error = refused(folder, tmp_path, capsys)
    kind = str(dtype).removeprefix("torch.")
    assert f"{WEIGHTS}: {name} is {kind};" in error


def test_a_pickled_weight_that_is_not_floating_point_is_refused(
    marian, tmp_path, capsys
):
    folder = edited(marian, tmp_path / "model")
    tensors = load_file(str(folder / WEIGHTS))
    (folder / WEIGHTS).unlink()
    tensors[SHARED] = tensors[SHARED].to(torch.int32)
    torch.save(tensors, folder / "pytorch_model.bin")
    error = refused(folder, tmp_path, capsys)
    assert f"pytorch_model.bin: {SHARED} is int32;" in error


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_weight_that_is_not_finite_is_refused(marian, tmp_path, capsys, value):
    name = "model.decoder.layers.0.fc2.weight"
    tensor = load_file(str(marian / WEIGHTS))[name].clone()
    tensor[3, 5] = value
    folder = edited(marian, tmp_path / "model", tensors={name: tensor})
    assert f"{name} holds NaN or infinite" in refused(folder, tmp_path, capsys)


def test_float64_and_bfloat16_weights_are_read(marian, tmp_path):
    """Floating-point weights of any width are weights: float64 ones
    translate exactly as the float32 ones they were made from."""
    for name, dtype in (("wide", torch.float64), ("narrow", torch.bfloat16)):
        tensors = load_file(str(marian / WEIGHTS))
        folder = edited(marian, tmp_path / name)
        save_file({k: v.to(dtype) for k, v in tensors.items()}, str(folder / WEIGHTS))
    texts = ["Ein Hund läuft durch den Schnee.", "Zwei Männer spielen Fußball."]
    options = SearchOptions(max_len_a=0, max_len_b=10)
    found = {}
    for source in (marian, tmp_path / "wide", tmp_path / "narrow"):
        run = tmp_path / "runs" / source.name
        assert main(["import", "hf", str(source), "-o", str(run)]) == 0
        found[source.name] = load_translator(run, "cpu").translate(texts, options)
    assert found["wide"] == found[marian.name]
    assert len(found["narrow"]) == 2


@pytest.mark.parametrize(
    "name",
    [
        "model.encoder.embed_tokens.weight",
        "model.decoder.embed_tokens.weight",
        "lm_head.weight",
    ],
)
def test_a_copy_of_the_shared_table_that_differs_is_refused(
    marian, tmp_path, capsys, name
):
    table = shared_of(marian).clone()
    table[7, 3] += 0.5  # one number is enough
    folder = edited(marian, tmp_path / "model", tensors={name: table})
    error = refused(folder, tmp_path, capsys)
    assert f"{WEIGHTS}: {name} differs from {SHARED};" in error


def test_equal_copies_and_marians_own_positions_are_accepted(marian, tmp_path):
    """What transformers writes besides: the same table under each name,
    and the sinusoids of its own position module."""
    table = shared_of(marian)
    config = json.loads((marian / "config.json").read_text())
    module = transformers.models.marian.modeling_marian
    positions = module.MarianSinusoidalPositionalEmbedding(
        config["max_position_embeddings"], config["d_model"]
    ).create_weight()
    copies = {
        "model.encoder.embed_tokens.weight": table.clone(),
        "model.decoder.embed_tokens.weight": table.clone(),
        "lm_head.weight": table.clone(),
        "model.encoder.embed_positions.weight": positions,
        "model.decoder.embed_positions.weight": positions.clone(),
    }
    folder = edited(marian, tmp_path / "model", tensors=copies)
    assert main(["import", "hf", str(folder), "-o", str(tmp_path / "run")]) == 0


@pytest.mark.parametrize(
    ("name", "tensor", "message"),
    [
        (
            "model.encoder.embed_positions.weight",
            torch.zeros(128, 32),
            "is not MarianMT's sinusoid table of 128 positions",
        ),
        (
            "model.decoder.embed_positions.weight",
            torch.zeros(64, 32),
            "is not MarianMT's sinusoid table of 128 positions",
        ),
        ("model.encoder.layer_norm.weight", torch.ones(32), "has no place for"),
        ("final_logits_bias", torch.zeros(1, 17), "final_logits_bias is (1, 17)"),
        ("model.encoder.layers.0.fc1.weight", torch.zeros(64, 31), "(64, 31), not"),
    ],
)
def test_a_tensor_the_conversion_would_not_use_as_is_is_refused(
    marian, tmp_path, capsys, name, tensor, message
):
    folder = edited(marian, tmp_path / "model", tensors={name: tensor})
    error = refused(folder, tmp_path, capsys)
    assert WEIGHTS in error and name in error and message in error


def test_an_unread_shared_table_of_a_model_per_side_is_refused(
    marian, tmp_path, capsys
):
    """With share_encoder_decoder_embeddings false, MarianMT reads each
    side's own table; a ``model.shared`` that differs is not quietly
    dropped, one that is the encoder's is."""
    table = shared_of(marian)
    per_side = {
        "model.encoder.embed_tokens.weight": table.clone(),
        "model.decoder.embed_tokens.weight": table.clone(),
    }
    folder = edited(
        marian,
        tmp_path / "same",
        config={"share_encoder_decoder_embeddings": False},
        tensors=per_side,
    )
    shutil.copy(folder / "vocab.json", folder / "target_vocab.json")
    assert main(["import", "hf", str(folder), "-o", str(tmp_path / "run")]) == 0
    other = shutil.copytree(folder, tmp_path / "other")
    stored = load_file(str(other / WEIGHTS))
    stored[SHARED] = table + 1.0
    save_file(stored, str(other / WEIGHTS))
    error = refused(other, tmp_path, capsys)
    assert f"{SHARED} differs from model.encoder.embed_tokens.weight" in error


# (key, value, what the line says besides the file and the key)
WRONG_CONFIG = [
    ("encoder_layers", "6", "valid integer"),
    ("encoder_layers", 6.0, "valid integer"),
    ("encoder_layers", True, "valid integer"),
    ("encoder_layers", 0, "greater than or equal to 1"),
    ("encoder_layers", 10**9, "the weights hold 2 encoder layers"),
    ("decoder_layers", -2, "greater than or equal to 1"),
    ("decoder_layers", 3, "the weights hold 2 decoder layers"),
    ("d_model", 64.5, "valid integer"),
    ("d_model", 10**12, "the token embedding is (464, 32)"),
    ("d_model", None, "valid integer"),
    ("max_position_embeddings", -1, "greater than or equal to 1"),
    ("max_position_embeddings", 10**12, "less than or equal to"),
    ("max_position_embeddings", "512", "valid integer"),
    ("pad_token_id", True, "valid integer"),
    ("pad_token_id", -1, "greater than or equal to 0"),
    ("pad_token_id", 10**6, "1000000 is not an id of a vocabulary of 464"),
    ("eos_token_id", 464, "464 is not an id of a vocabulary of 464"),
    ("eos_token_id", [0], "valid integer"),
    ("vocab_size", 465, "the token embedding has 464 rows"),
    ("encoder_attention_heads", 0, "greater than or equal to 1"),
    ("decoder_attention_heads", 8, "differs from"),
    ("encoder_ffn_dim", 0, "greater than or equal to 1"),
    ("encoder_ffn_dim", 65, "differs from"),
    ("dropout", 1.5, "less than 1"),
    ("dropout", "0.1", "valid number"),
    ("attention_dropout", True, "valid number"),
    ("scale_embedding", "true", "valid boolean"),
    ("scale_embedding", 1, "valid boolean"),
    ("tie_word_embeddings", 0, "valid boolean"),
    ("share_encoder_decoder_embeddings", "no", "valid boolean"),
    ("activation_function", 3, "valid string"),
    ("activation_function", "tanh", "Rosetta has"),
    ("decoder_start_token_id", 5, "not pad_token_id"),
    ("num_beams", 0, "greater than or equal to 1"),
    ("max_length", "64", "valid integer"),
    ("length_penalty", float("nan"), "finite number"),
]


@pytest.mark.parametrize(("key", "value", "message"), WRONG_CONFIG)
def test_a_config_value_of_the_wrong_type_or_range_is_one_line(
    marian, tmp_path, capsys, key, value, message
):
    folder = edited(marian, tmp_path / "model", config={key: value})
    error = refused(folder, tmp_path, capsys)
    assert "config.json" in error and key in error and message in error, error


@pytest.mark.parametrize(
    "key", ["d_model", "encoder_layers", "pad_token_id", "eos_token_id", "vocab_size"]
)
def test_a_missing_config_key_is_one_line(marian, tmp_path, capsys, key):
    folder = edited(marian, tmp_path / "model", drop=(key,))
    error = refused(folder, tmp_path, capsys)
    assert f"config.json: not a MarianMT config ({key}: Field required)" in error


SIZES = ["d_model", "encoder_layers", "decoder_layers", "encoder_ffn_dim", "vocab_size"]
IDS = ["pad_token_id", "eos_token_id", "decoder_start_token_id"]
NOT_A_WHOLE_NUMBER = st.one_of(
    st.text(max_size=5),
    st.floats(),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
)


@pytest.fixture(scope="module")
def scratch(marian, tmp_path_factory) -> Path:
    return edited(marian, tmp_path_factory.mktemp("scratch") / "model")


@given(
    key=st.sampled_from(SIZES + IDS),
    value=st.one_of(NOT_A_WHOLE_NUMBER, st.integers(max_value=-1)),
)
def test_every_size_and_id_is_a_whole_number_in_range(scratch, marian, key, value):
    """Whatever JSON stands where a size or an id belongs, the folder is
    refused at its configuration, before its weights are read."""
    settings = json.loads((marian / "config.json").read_text()) | {key: value}
    (scratch / "config.json").write_text(json.dumps(settings))
    with pytest.raises(RosettaError) as caught:
        read_marian_folder(scratch)
    message = str(caught.value)
    assert message.startswith(f"{scratch / 'config.json'}: not a MarianMT config")
    assert key in message and len(message.splitlines()) == 1


def test_heads_that_do_not_divide_the_width_are_one_line(marian, tmp_path, capsys):
    heads = {"encoder_attention_heads": 3, "decoder_attention_heads": 3}
    folder = edited(marian, tmp_path / "model", config=heads)
    error = refused(folder, tmp_path, capsys)
    assert "config.json: encoder_attention_heads 3 does not divide d_model 32" in error


def test_positions_beyond_memory_are_refused_before_they_are_made(
    marian, tmp_path, capsys, monkeypatch
):
    folder = edited(
        marian, tmp_path / "model", config={"max_position_embeddings": 10**6}
    )
    # the weights fit in 10 MB; a million positions of 32 floats do not
    monkeypatch.setattr(resources, "available_memory", lambda: 10**7)
    error = refused(folder, tmp_path, capsys)
    assert (
        "config.json: max_position_embeddings 1000000, d_model 32: the model" in error
    )
    assert "GB of memory" in error


@pytest.mark.parametrize(
    "name",
    ["config.json", "generation_config.json", "tokenizer_config.json", "vocab.json"],
)
def test_json_nested_without_end_is_one_line(marian, tmp_path, capsys, name):
    folder = edited(marian, tmp_path / "model")
    (folder / name).write_text('{"a": ' + "[" * DEEP + "]" * DEEP + "}")
    error = refused(folder, tmp_path, capsys)
    assert f"{name}: not a JSON object" in error and "recursion limit" in error


@pytest.mark.parametrize(
    ("name", "values", "message"),
    [
        ("generation_config.json", {"num_beams": 0}, "num_beams: must be greater"),
        ("generation_config.json", {"num_beams": "4"}, "num_beams: must be a valid"),
        ("generation_config.json", {"max_length": True}, "max_length: must be a"),
        ("generation_config.json", {"length_penalty": "1"}, "length_penalty: must"),
        ("generation_config.json", {"decoder_start_token_id": 3}, "not config.json's"),
        ("generation_config.json", {"eos_token_id": [0, 9]}, "eos_token_id [0, 9]"),
        ("generation_config.json", {"eos_token_id": -1}, "eos_token_id"),
        ("tokenizer_config.json", {"source_lang": 5}, "source_lang: must be a"),
        ("tokenizer_config.json", {"target_lang": ["en"]}, "target_lang: must be a"),
        ("tokenizer_config.json", {"separate_vocabs": "no"}, "separate_vocabs: must"),
    ],
)
def test_a_generation_or_tokenizer_value_is_checked(
    marian, tmp_path, capsys, name, values, message
):
    folder = edited(marian, tmp_path / "model")
    path = folder / name
    path.write_text(json.dumps(json.loads(path.read_text()) | values))
    error = refused(folder, tmp_path, capsys)
    assert name in error and message in error, error


def vocab_with(marian: Path, how: str) -> dict[str, Any]:
    vocab = json.loads((marian / "vocab.json").read_text())
    piece = next(p for p in vocab if p not in ("</s>", "<unk>", "<pad>"))
    if how == "bool":
        vocab[piece] = True
    elif how == "text":
        vocab[piece] = str(vocab[piece])
    elif how == "negative":
        vocab[piece] = -1
    elif how == "duplicate":
        vocab[piece] = vocab["<unk>"]
    elif how == "eos":  # </s> and a piece swap ids
        vocab["</s>"], vocab[piece] = vocab[piece], vocab["</s>"]
    return vocab


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("bool", "whole-number ids expected"),
        ("text", "whole-number ids expected"),
        ("negative", "ids that are not 0..463"),
        ("duplicate", "ids that are not 0..463"),
        ("eos", "</s> is 2, config.json's eos_token_id 0"),
    ],
)
def test_a_vocabulary_of_wrong_ids_is_one_line(marian, tmp_path, capsys, how, message):
    folder = edited(marian, tmp_path / "model")
    (folder / "vocab.json").write_text(json.dumps(vocab_with(marian, how)))
    error = refused(folder, tmp_path, capsys)
    assert "vocab.json" in error and message in error, error


def test_a_hub_download_of_links_into_the_cache_imports(marian, tmp_path):
    """The Hugging Face cache holds a snapshot as links to its blobs."""
    blobs, snapshot = tmp_path / "blobs", tmp_path / "snapshot"
    shutil.copytree(marian, blobs)
    snapshot.mkdir()
    for file in blobs.iterdir():
        (snapshot / file.name).symlink_to(file)
    assert main(["import", "hf", str(snapshot), "-o", str(tmp_path / "run")]) == 0


@pytest.fixture(scope="module")
def untied(marian, tmp_path_factory) -> Path:
    """The model with an output layer of its own (tie_word_embeddings
    false), as transformers writes it: every table under its own name."""
    folder = tmp_path_factory.mktemp("untied") / "model"
    table = shared_of(marian)
    generator = torch.Generator().manual_seed(3)
    tensors = {
        "lm_head.weight": 0.3 * torch.randn(table.shape, generator=generator),
        "model.encoder.embed_tokens.weight": table.clone(),
        "model.decoder.embed_tokens.weight": table.clone(),
    }
    return edited(marian, folder, {"tie_word_embeddings": False}, tensors=tensors)


def logits(folder: Path, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.MarianMTModel.from_pretrained(folder).eval()
    with torch.no_grad():
        return model(input_ids=src, decoder_input_ids=tgt).logits


def rosetta_logits(run: Path, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """The imported run's logits on MarianMT's ids, in MarianMT's columns."""
    vocab = json.loads((run.parent / "model" / "vocab.json").read_text())
    table = imported_ids(vocab, len(vocab), 0, len(vocab) - 1, "vocab.json")
    rosetta = {m: r for r, m in enumerate(table.rows) if r != 0}  # <pad>: <bos>
    columns = torch.tensor([rosetta[m] for m in range(len(vocab))])
    model = load_translator(run, "cpu").model
    with torch.no_grad():
        features = model(
            columns[src], torch.ones_like(src, dtype=torch.bool), columns[tgt]
        )
        return model.output_proj(features)[..., columns]


@pytest.mark.reference
def test_an_untied_export_loads_in_transformers_as_the_same_model(untied, tmp_path):
    run, out = untied.parent / "run", tmp_path / "hf"
    assert main(["import", "hf", str(untied), "-o", str(run)]) == 0
    assert main(["export", "hf", "-m", str(run), "-o", str(out)]) == 0
    assert not json.loads((out / "config.json").read_text())["tie_word_embeddings"]
    generator = torch.Generator().manual_seed(0)
    src = torch.randint(2, 400, (4, 9), generator=generator)
    src[:, -1] = 0  # </s>
    tgt = torch.randint(2, 400, (4, 6), generator=generator)
    tgt[:, 0] = 463  # <pad>, the decoder's start
    original = logits(untied, src, tgt)
    assert (rosetta_logits(run, src, tgt) - original).abs().max().item() <= 1e-4
    assert (logits(out, src, tgt) - original).abs().max().item() <= 1e-4


@pytest.mark.parametrize("name", ["source.spm", "target.spm"])
def test_an_empty_sentencepiece_model_is_one_line(marian, tmp_path, capsys, name):
    folder = edited(marian, tmp_path / "m")
    (folder / name).write_bytes(b"")
    assert f"{name}: not a SentencePiece model (an empty file)" in refused(
        folder, tmp_path, capsys
    )
