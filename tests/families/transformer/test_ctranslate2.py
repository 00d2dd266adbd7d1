"""CTranslate2 export: the exported model translates as the Rosetta model does."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from rosetta import SearchOptions
from rosetta.cli import main
from rosetta.data.vocab import EOS
from rosetta.errors import RosettaError
from rosetta.jobs.loading import load_translator
from rosetta.jobs.training import run_training
from rosetta.runs.checkpoint import read_index
from tests.support.toy import RNN_ATTENTION, TRANSFORMER_RELATIVE, toy_config

ctranslate2 = pytest.importorskip(
    "ctranslate2", reason="an optional extra: pip install 'rosetta-nmt[ct2]'"
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
    translator = load_translator(latest, device="cpu")
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
    translator = load_translator(run, device="cpu")
    assert len(ct2_greedy(out, translator, SENTENCES)) == len(SENTENCES)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (RNN_ATTENTION, "(arch rnn); ctranslate2 takes the Transformer"),
        (
            TRANSFORMER_RELATIVE,
            "model.positions is relative; CTranslate2 has no Transformer-XL "
            "attention, only absolute sinusoidal positions: to export to "
            "CTranslate2, train with model.positions=sinusoidal",
        ),
        (
            TRANSFORMER_RELATIVE.replace("relative", "alibi"),
            "model.positions is alibi; CTranslate2's encoder-decoder has no distance",
        ),
    ],
    ids=["recurrent", "relative", "alibi"],
)
def test_a_model_ctranslate2_cannot_run_is_a_clear_error(
    tmp_path, capsys, model, message
):
    config, _ = toy_config(
        tmp_path, "train.max_epochs=null", "train.max_steps=5", model=model
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
    assert message in capsys.readouterr().err


# ---- decoding with the export: the ctranslate2 engine ----------------------


@pytest.fixture(scope="module")
def engines(toy_run, tmp_path_factory):
    """Rosetta's translator and the CTranslate2 one, on the same checkpoint."""
    from rosetta.jobs.loading import load

    run = toy_run("transformer")
    latest = run / read_index(run)["latest"]
    out = tmp_path_factory.mktemp("engine") / "ct2"
    assert main(["export", "ctranslate2", "-m", str(latest), "-o", str(out)]) == 0
    exported = load(out, device="cpu", engine="ctranslate2")
    return load_translator(latest, device="cpu"), exported, out


REFILL = {"refill": True, "stopping": "k_finished"}


@pytest.mark.reference
@pytest.mark.parametrize(
    "options",
    [
        SearchOptions(),
        SearchOptions(beam_size=4, nbest=3, **REFILL),
        SearchOptions(beam_size=3, alpha=0.0, **REFILL),
        SearchOptions(max_len_a=0.0, max_len_b=2),  # the length limit bites
        SearchOptions(max_len_a=0.5, max_len_b=1),  # a limit per sentence
        SearchOptions(beam_size=3, max_len_a=0.5, max_len_b=1, **REFILL),
    ],
    ids=["greedy", "beam4-nbest3", "beam3-alpha0", "limit", "limits", "beam-limits"],
)
def test_the_engine_gives_rosettas_translations_and_scores(engines, options):
    rosetta_translator, ct2_translator, _ = engines
    ours = rosetta_translator.translate_nbest([*SENTENCES, ""], options)
    theirs = ct2_translator.translate_nbest([*SENTENCES, ""], options)
    assert theirs[-1] == []  # a blank line, no hypotheses
    for mine, found in zip(ours, theirs, strict=True):
        assert [t.token_ids for t in found] == [t.token_ids for t in mine]
        for a, b in zip(mine, found, strict=True):
            assert b.score == pytest.approx(a.score, abs=1e-4)
            if a.normalized_score is not None:
                assert b.normalized_score == pytest.approx(a.normalized_score, abs=1e-4)


class CallLog:
    """The engine's CTranslate2 translator, recording each call's length limit
    and batch size."""

    def __init__(self, model):
        self.model, self.calls = model, []

    def translate_batch(self, batch, **arguments):
        self.calls.append((arguments["max_decoding_length"], len(batch)))
        return self.model.translate_batch(batch, **arguments)

    def __getattr__(self, name):
        return getattr(self.model, name)


@pytest.mark.reference
def test_a_beam_is_decoded_again_only_where_its_own_limit_acted(engines):
    rosetta_translator, ct2_translator, _ = engines
    tight = SearchOptions(beam_size=3, max_len_a=0.5, max_len_b=1, **REFILL)
    roomy = SearchOptions(beam_size=3, **REFILL)
    model = ct2_translator.model
    ct2_translator.model = spy = CallLog(model)
    try:
        found = {
            o: ct2_translator.translate_nbest(SENTENCES, o) for o in (tight, roomy)
        }
    finally:
        ct2_translator.model = model
    for options, translations in found.items():
        expected = rosetta_translator.translate_nbest(SENTENCES, options)
        assert token_ids(translations) == token_ids(expected)
    # tight limits are 2..4 (0.5·S + 1 with S = 2..6 pieces): one call under
    # the largest, then each shorter limit that cut a beam short, on its own
    *tight_calls, roomy_call = spy.calls
    assert tight_calls[0] == (4, len(SENTENCES))
    assert 1 < len(tight_calls) <= 3
    assert {limit for limit, _ in tight_calls[1:]} <= {2, 3}
    assert roomy_call[1] == len(SENTENCES)  # no beam came near a default limit


def token_ids(nbest_lists):
    return [[t.token_ids for t in nbest] for nbest in nbest_lists]


def test_the_engine_samples_and_returns_attention(engines):
    _, ct2_translator, _ = engines
    greedy = ct2_translator.translate(SENTENCES)
    top1 = SearchOptions(sample=True, top_k=1, temperature=1.5)
    assert ct2_translator.translate(SENTENCES, top1) == greedy
    assert len(ct2_translator.translate(SENTENCES, SearchOptions(sample=True))) == 5
    [found] = ct2_translator.translate_nbest(
        [SENTENCES[0]], SearchOptions(need_attention=True)
    )
    attention = found[0].attention
    assert attention.shape[1:3] == (1, 1)
    assert attention.shape[-1] == len(SENTENCES[0].split()) + 1  # with <eos>


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (SearchOptions(beam_size=4), "use --refill --stopping k_finished"),
        (SearchOptions(penalty="gnmt"), "use the power penalty"),
        (SearchOptions(sample=True, seed=1), "sampling cannot be seeded"),
    ],
)
def test_what_the_engine_cannot_do_is_a_clear_error(engines, options, message):
    _, ct2_translator, _ = engines
    with pytest.raises(RosettaError, match=message):
        ct2_translator.translate(SENTENCES, options)


def test_the_exported_folder_alone_translates_in_a_fresh_process(engines, tmp_path):
    rosetta_translator, _, out = engines
    alone = tmp_path / "elsewhere"
    shutil.copytree(out, alone)
    done = subprocess.run(
        [
            *(sys.executable, "-m", "rosetta.cli", "translate", "-m", str(alone)),
            *("--engine", "ctranslate2", "--beam", "3", "--refill"),
            *("--stopping", "k_finished"),
        ],
        input="\n".join([*SENTENCES, ""]).encode() + b"\n",
        capture_output=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    beam = SearchOptions(beam_size=3, **REFILL)
    expected = rosetta_translator.translate([*SENTENCES, ""], beam)
    assert done.stdout.decode().split("\n")[:-1] == expected


def test_the_server_runs_on_the_engine(engines):
    from fastapi.testclient import TestClient

    from rosetta.serve.app import create_app

    rosetta_translator, ct2_translator, _ = engines
    with TestClient(create_app(ct2_translator)) as client:
        response = client.post("/translate", json={"sentences": SENTENCES})
        info = client.get("/info").json()
    assert response.status_code == 200
    texts = [r["hypotheses"][0]["text"] for r in response.json()["translations"]]
    assert texts == rosetta_translator.translate(SENTENCES)
    assert info["parameters"] == rosetta_translator.parameter_count


@pytest.mark.reference
def test_the_engine_starts_each_translation_with_its_prefix_as_rosetta_does(engines):
    """Greedy search: the same tokens and scores, a prefix's tokens scored
    with the rest (CTranslate2 leaves them out of its own score)."""
    rosetta_translator, ct2_translator, _ = engines
    whole = rosetta_translator.translate(SENTENCES)
    constraints = [
        {"prefix": " ".join(text.split()[:cut])}
        for text in whole
        for cut in (1, 2, len(text.split()))  # the last: nothing left to add
    ]
    sentences = [s for s in SENTENCES for _ in range(3)]
    ours = rosetta_translator.translate_nbest(sentences, constraints=constraints)
    theirs = ct2_translator.translate_nbest(sentences, constraints=constraints)
    for constraint, [mine], [found] in zip(constraints, ours, theirs, strict=True):
        assert found.token_ids == mine.token_ids
        assert found.score == pytest.approx(mine.score, abs=1e-4)
        assert mine.constraints_met is found.constraints_met is True
        assert mine.text.startswith(constraint["prefix"])


def test_the_engine_refuses_what_it_cannot_do_with_constraints(engines):
    _, ct2_translator, _ = engines
    for kind in ("include", "exclude"):
        with pytest.raises(RosettaError, match="CTranslate2 takes a prefix, not"):
            ct2_translator.translate(SENTENCES[:1], constraints=[{kind: ["a"]}])
    beam = SearchOptions(beam_size=3, **REFILL)
    with pytest.raises(RosettaError, match="a prefix with greedy search"):
        ct2_translator.translate(SENTENCES[:1], beam, constraints=[{"prefix": "a"}])


def test_a_users_item_where_the_engine_keeps_its_export_is_never_replaced(
    toy_run, tmp_path, capsys
):
    """Translating with --engine ctranslate2 exports into the checkpoint on
    first use; a folder or file of the user's already there is refused in one
    line, and kept."""
    pytest.importorskip("ctranslate2")
    run = tmp_path / "run"
    shutil.copytree(toy_run("transformer"), run)
    latest = run / read_index(run)["latest"]
    shutil.rmtree(latest / "ctranslate2", ignore_errors=True)  # another test's
    source = tmp_path / "in.txt"
    source.write_text("alpha beta\n")
    for make in ("folder", "file"):
        place = latest / "ctranslate2"
        if make == "folder":
            place.mkdir()
            (place / "notes.txt").write_text("mine")
        else:
            place.write_text("mine")
        command = ["translate", "-m", str(run), "-i", str(source)]
        capsys.readouterr()
        assert main([*command, "--engine", "ctranslate2"]) == 2
        errors = [e for e in capsys.readouterr().err.splitlines() if "error" in e]
        assert len(errors) == 1
        assert "not a ctranslate2 export Rosetta wrote" in errors[0]
        kept = place / "notes.txt" if make == "folder" else place
        assert kept.read_text() == "mine"
        shutil.rmtree(place) if make == "folder" else place.unlink()
