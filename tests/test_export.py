"""CTranslate2 export: the exported model translates as the Rosetta model does."""

from __future__ import annotations

import json

import pytest

from rosetta import Translator
from rosetta.checkpoint import read_index
from rosetta.cli import main
from rosetta.data.vocab import EOS
from rosetta.train.run import run_training
from tests.toy import RNN_ATTENTION, toy_config

ctranslate2 = pytest.importorskip(
    "ctranslate2", reason="CTranslate2 is an optional extra: pip install rosetta[ct2]"
)

SENTENCES = [
    "alpha beta gamma",
    "delta eps",
    "kappa iota theta zeta eta",
    "beta beta alpha",
    "zeta",
]
PRE_NORM_SHARED = """{encoder_layers: 2, decoder_layers: 2, d_model: 32, heads: 4,
   d_ff: 64, dropout: 0.1, norm: pre, share_embeddings: true, max_positions: 64}"""


def ct2_greedy(folder, translator, sentences):
    """CTranslate2's greedy search on Rosetta's source pieces (with <eos>)."""
    engine = ctranslate2.Translator(str(folder), device="cpu")
    sources = [
        [*translator.tokenizers.src.id_pieces(translator.encode(s)), EOS]
        for s in sentences
    ]
    return engine.translate_batch(
        sources,
        beam_size=1,
        return_scores=True,
        length_penalty=0.0,
        min_decoding_length=0,  # CTranslate2's default forbids ending at once
    )


@pytest.fixture(scope="module")
def pre_norm_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pre-norm")
    config, _ = toy_config(
        folder,
        "train.max_epochs=null",
        "train.max_steps=60",
        "train.validate_every=30",
        "tokenizer.joint=true",
        model=PRE_NORM_SHARED,
    )
    run_training(config, folder / "run")
    return folder / "run"


@pytest.mark.reference
@pytest.mark.parametrize("kind", ["post-norm", "pre-norm-shared"])
def test_the_export_translates_exactly_as_rosetta(
    toy_run, pre_norm_run, tmp_path, kind
):
    run = toy_run("transformer") if kind == "post-norm" else pre_norm_run
    latest = run / read_index(run)["latest"]  # the most trained
    out = tmp_path / "ct2"
    assert main(["export", "ctranslate2", "-m", str(latest), "-o", str(out)]) == 0
    translator = Translator.load(latest, device="cpu")
    ours = translator.translate_nbest(SENTENCES)
    assert any(found[0].tokens for found in ours)  # not only empty outputs
    theirs = ct2_greedy(out, translator, SENTENCES)
    for mine, result in zip(ours, theirs, strict=True):
        assert result.hypotheses[0] == mine[0].tokens
        assert result.scores[0] == pytest.approx(mine[0].score, abs=1e-4)
    engine = json.loads((out / "rosetta.json").read_text())
    assert engine["tokenizers"] == translator.tokenizers.to_dict()
    assert engine["quantization"] == "float32"


def test_an_int8_export_is_written_and_decodes(toy_run, tmp_path):
    run = toy_run("transformer")
    out = tmp_path / "int8"
    args = ["export", "ctranslate2", "-m", str(run), "-o", str(out)]
    assert main([*args, "--quantization", "int8"]) == 0
    assert json.loads((out / "rosetta.json").read_text())["quantization"] == "int8"
    translator = Translator.load(run, device="cpu")
    assert len(ct2_greedy(out, translator, SENTENCES)) == len(SENTENCES)


def test_a_recurrent_model_is_a_clear_error(tmp_path, capsys):
    config, _ = toy_config(
        tmp_path, "train.max_epochs=null", "train.max_steps=5", model=RNN_ATTENTION
    )
    run_training(config, tmp_path / "run")
    args = [
        "export",
        "ctranslate2",
        "-m",
        str(tmp_path / "run"),
        "-o",
        str(tmp_path / "o"),
    ]
    assert main(args) == 2
    assert "a recurrent model; CTranslate2 runs Transformers only" in (
        capsys.readouterr().err
    )
