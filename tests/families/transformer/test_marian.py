"""MarianMT models imported as Rosetta runs (``rosetta import hf``), against
Hugging Face transformers on the same models, made offline
(``benchmarks/marian_model.py``)."""

from __future__ import annotations

import json
import pickle
import shutil
import warnings
from pathlib import Path

import pytest
import torch
from benchmarks.marian_model import hf_generate, make_marian, same_search, sentences

from rosetta.cli import main
from rosetta.data.batching import Example, collate
from rosetta.errors import RosettaError
from rosetta.families import all_importers
from rosetta.families.transformer.hf.convert import imported_ids
from rosetta.jobs.importers import import_run
from rosetta.jobs.loading import load_translator
from rosetta.search.options import SearchOptions
from tests.support.paths import ROOT

transformers = pytest.importorskip("transformers")
HF = next(importer for importer in all_importers() if importer.name == "hf")
LIMIT = 20  # output tokens, the same limit on both sides


def quiet(*_):
    pass


@pytest.fixture(scope="module")
def marian(tmp_path_factory) -> Path:
    return make_marian(tmp_path_factory.mktemp("marian") / "opus-mt-de-en")


@pytest.fixture(scope="module")
def imported(marian, tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("imported") / "run"
    import_run(HF, str(marian), run, log=quiet)
    return run


@pytest.fixture(scope="module")
def reference(marian):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.MarianMTModel.from_pretrained(marian).eval()
        tokenizer = transformers.MarianTokenizer.from_pretrained(marian)
    return model, tokenizer


def rosetta_column_of(marian: Path) -> torch.Tensor:
    """For each MarianMT id, the Rosetta id of its row (``<pad>``: ``<bos>``,
    the row the decoder starts from)."""
    vocab = json.loads((marian / "vocab.json").read_text())
    table = imported_ids(vocab, len(vocab), 0, len(vocab) - 1, "vocab.json")
    column = {m: r for r, m in enumerate(table.rows) if r != 0}
    return torch.tensor([column[m] for m in range(len(vocab))])


@pytest.mark.reference
def test_imported_logits_equal_transformers(marian, imported, reference):
    hf_model, tokenizer = reference
    texts = sentences("de", 8, "val")  # different lengths: padding
    batch = tokenizer(texts, return_tensors="pt", padding=True)
    assert not bool(batch["attention_mask"].all())
    columns = rosetta_column_of(marian)
    generator = torch.Generator().manual_seed(0)
    decoder_in = torch.randint(2, 400, (8, 6), generator=generator)
    decoder_in[:, 0] = tokenizer.pad_token_id  # the start token
    translator = load_translator(imported, "cpu")
    examples = collate([Example(translator.encode(t), []) for t in texts])
    real = batch["attention_mask"].bool()
    assert examples.src_mask.tolist() == real.tolist()
    assert examples.src[real].tolist() == columns[batch["input_ids"]][real].tolist()
    with torch.no_grad():
        theirs = hf_model(**batch, decoder_input_ids=decoder_in).logits
        features = translator.model(
            examples.src, examples.src_mask, columns[decoder_in]
        )
        ours = translator.model.output_proj(features)[..., columns]
    assert (ours - theirs).abs().max().item() <= 1e-4


def generate(reference, texts: list[str], beams: int) -> list[str]:
    return hf_generate(*reference, texts, beams, LIMIT)


@pytest.mark.reference
@pytest.mark.parametrize("beams", [1, 5])
def test_imported_search_equals_generate(imported, reference, beams):
    """Greedy, and beam search where the definitions coincide (``same_search``:
    transformers ranks a finished hypothesis by Σ log P / L^length_penalty,
    L counting its tokens and </s>, Rosetta's ``power`` penalty; both keep k
    live prefixes and stop once k have finished)."""
    texts = sentences("de", 100, "val")
    ours = load_translator(imported, "cpu").translate(texts, same_search(beams, LIMIT))
    theirs = generate(reference, texts, beams)
    assert ours == theirs
    assert len(set(theirs)) > 30  # the sentences' translations differ
    assert any(len(t.split()) < 10 for t in theirs)  # some end early


def test_a_pickle_reads_like_safetensors(marian, imported, tmp_path):
    folder = shutil.copytree(marian, tmp_path / "bin")
    tensors = __import__("safetensors.torch").torch.load_file(
        str(folder / "model.safetensors")
    )
    (folder / "model.safetensors").unlink()
    torch.save(tensors, folder / "pytorch_model.bin")
    import_run(HF, str(folder), tmp_path / "run", log=quiet)
    texts = sentences("de", 10, "val")
    options = SearchOptions(max_len_a=0, max_len_b=LIMIT)
    assert load_translator(tmp_path / "run", "cpu").translate(
        texts, options
    ) == load_translator(imported, "cpu").translate(texts, options)


class Marker:
    """Unpickling this runs ``Path.touch`` on the marker: code, not data."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


def test_a_pickle_that_runs_code_is_refused(marian, tmp_path):
    folder = shutil.copytree(marian, tmp_path / "evil")
    (folder / "model.safetensors").unlink()
    marker = tmp_path / "MARKER"
    with open(folder / "pytorch_model.bin", "wb") as handle:
        pickle.dump({"model.shared.weight": Marker(marker)}, handle)
    with pytest.raises(RosettaError, match="refused: the pickle asks for more"):
        import_run(HF, str(folder), tmp_path / "run", log=quiet)
    assert not marker.exists()
    assert not (tmp_path / "run").exists()


def broken(marian: Path, tmp_path: Path, how: str) -> Path:
    folder = shutil.copytree(marian, tmp_path / how)
    if how == "model_type":
        config = json.loads((folder / "config.json").read_text())
        config["model_type"] = "t5"
        (folder / "config.json").write_text(json.dumps(config))
    elif how == "no_spm":
        (folder / "target.spm").unlink()
    elif how == "vocab":
        vocab = json.loads((folder / "vocab.json").read_text())
        vocab.pop(next(p for p in vocab if p not in ("</s>", "<unk>", "<pad>")))
        (folder / "vocab.json").write_text(json.dumps(vocab))
    elif how == "truncated":
        weights = folder / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    elif how == "garbage_spm":
        (folder / "source.spm").write_bytes(b"not a model")
    return folder


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("model_type", "model_type 't5'; rosetta import hf reads marian"),
        ("no_spm", "target.spm: missing"),
        ("vocab", "pieces with ids that are not"),
        ("truncated", "model.safetensors: cannot read weights"),
        ("garbage_spm", "source.spm: not a SentencePiece model"),
    ],
)
def test_a_broken_model_is_one_line_and_leaves_nothing(
    marian, tmp_path, capsys, how, message
):
    folder = broken(marian, tmp_path, how)
    output = tmp_path / "run"
    assert main(["import", "hf", str(folder), "-o", str(output)]) != 0
    error = capsys.readouterr().err.strip()
    assert message in error
    assert len(error.splitlines()) == 1
    assert not output.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_an_import_replaces_only_an_earlier_import(marian, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["import", "hf", str(marian), "-o", str(run)]) == 0
    before = sorted(p.name for p in run.iterdir())
    assert main(["import", "hf", str(marian), "-o", str(run)]) != 0
    assert "pass --overwrite" in capsys.readouterr().err
    assert main(["import", "hf", str(marian), "-o", str(run), "--overwrite"]) == 0
    assert sorted(p.name for p in run.iterdir()) == before
    (run / "notes.txt").write_text("mine")
    assert main(["import", "hf", str(marian), "-o", str(run), "--overwrite"]) != 0
    assert (run / "notes.txt").read_text() == "mine"


def test_a_name_that_is_neither_folder_nor_hub_name(tmp_path, capsys):
    assert main(["import", "hf", str(tmp_path / "no/such/x"), "-o", "o"]) != 0
    assert "neither a model folder nor a Hub name" in capsys.readouterr().err


@pytest.mark.reference
def test_import_then_export_gives_the_same_tensors(marian, imported, tmp_path):
    from safetensors.torch import load_file

    out = tmp_path / "hf"
    assert main(["export", "hf", "-m", str(imported), "-o", str(out)]) == 0
    original = load_file(str(marian / "model.safetensors"))
    exported = load_file(str(out / "model.safetensors"))
    assert original.keys() == exported.keys()
    for name, tensor in original.items():
        assert torch.equal(tensor, exported[name]), name
    assert json.loads((out / "vocab.json").read_text()) == json.loads(
        (marian / "vocab.json").read_text()
    )


@pytest.fixture(scope="module")
def trained_here(tmp_path_factory) -> Path:
    """A Transformer trained by Rosetta (interleaved sinusoids, its own
    SentencePiece ids, no logits bias), briefly, on Multi30k's first lines."""
    from rosetta.jobs.run_config import load_config
    from rosetta.jobs.training import run_training

    folder = tmp_path_factory.mktemp("trained-here")
    for language in ("de", "en"):
        text = "\n".join(sentences(language, 2000)) + "\n"
        (folder / f"train.{language}").write_text(text)
    (folder / "config.yaml").write_text(
        "data: {train: {src: train.de, tgt: train.en}, src_lang: de, tgt_lang: en}\n"
        "tokenizer: {vocab_size: 400, joint: true}\n"
        "model: {encoder_layers: 2, decoder_layers: 2, d_model: 32, heads: 4,\n"
        "        d_ff: 64, share_embeddings: true, max_positions: 128,\n"
        "        activation: gelu}\n"
        "train: {max_steps: 200, batch_tokens: 2000, warmup_steps: 20, lr: 0.003,\n"
        "        max_epochs: null, keep_last: 1}\n"
    )
    config = load_config(folder / "config.yaml")
    run_training(config, folder / "run")
    return folder / "run"


@pytest.mark.reference
def test_an_export_translates_as_rosetta_does(trained_here, tmp_path):
    out = tmp_path / "hf"
    assert main(["export", "hf", "-m", str(trained_here), "-o", str(out)]) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.MarianMTModel.from_pretrained(out).eval()
        tokenizer = transformers.MarianTokenizer.from_pretrained(out)
    texts = sentences("de", 100, "val")
    options = SearchOptions(max_len_a=0, max_len_b=LIMIT)
    ours = load_translator(trained_here, "cpu").translate(texts, options)
    theirs = generate((model, tokenizer), texts, beams=1)
    # plain generate() searches as rosetta translate does by default: greedy
    assert model.generation_config.num_beams == 1
    # Rosetta prints a translation's words one space apart (an undertrained
    # model's "▁ ▁" pieces decode to two)
    assert [" ".join(text.split()) for text in theirs] == ours
    assert len(set(ours)) > 10  # not one translation for every sentence


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ("model.positions=relative", "relative positions: MarianMT adds"),
        ("model.norm=pre", "pre-norm layers"),
        ("tokenizer.kind=word", "MarianMT's tokenizer reads SentencePiece"),
    ],
)
def test_what_marian_cannot_express_is_refused(tmp_path, capsys, change, reason):
    from tests.support.toy import toy_config_file

    config = toy_config_file(tmp_path)
    run = tmp_path / "run"
    setting = [
        "--set",
        "train.max_steps=1",
        "--set",
        "train.max_epochs=null",
        "--set",
        change,
    ]
    setting += [
        "--set",
        "model.share_embeddings=true",
        "--set",
        "tokenizer.joint=true",
    ]
    assert main(["train", str(config), "-o", str(run), *setting]) == 0
    capsys.readouterr()
    assert main(["export", "hf", "-m", str(run), "-o", str(tmp_path / "hf")]) != 0
    error = capsys.readouterr().err
    assert reason in error and len(error.strip().splitlines()) == 1
    assert not (tmp_path / "hf").exists()


def test_other_families_are_refused(toy_run, tmp_path, capsys):
    run = toy_run("rnn-attention")
    assert main(["export", "hf", "-m", str(run), "-o", str(tmp_path / "hf")]) != 0
    assert "hf takes the Transformer encoder-decoder" in capsys.readouterr().err


@pytest.fixture(scope="module")
def multilingual(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("multi")
    marian = make_marian(folder / "opus-mt-de-mul", languages=("fra", "spa"), seed=1)
    import_run(HF, str(marian), folder / "run", log=quiet)
    return marian, folder / "run"


@pytest.mark.reference
def test_a_multilingual_model_translates_into_the_language_chosen(multilingual):
    marian, run = multilingual
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.MarianMTModel.from_pretrained(marian).eval()
        tokenizer = transformers.MarianTokenizer.from_pretrained(marian)
    texts = sentences("de", 20, "val")
    translator = load_translator(run, "cpu")
    assert translator.target_languages == ["fra", "spa"]
    options = SearchOptions(max_len_a=0, max_len_b=LIMIT)
    found = {}
    for code in ("fra", "spa"):
        ours = translator.for_language(code).translate(texts, options)
        tagged = [f">>{code}<< {text}" for text in texts]
        assert ours == generate((model, tokenizer), tagged, beams=1)
        found[code] = ours
    assert found["fra"] != found["spa"]


def test_a_wrong_or_missing_target_language_is_one_line(
    multilingual, imported, tmp_path, capsys
):
    _, run = multilingual
    source = tmp_path / "in.de"
    source.write_text("Ein Hund.\n")
    for flags, message in [
        (
            ["--target-lang", "deu"],
            "target language 'deu' is not one of the model's 2 codes",
        ),
        ([], "choose the target language with --target-lang: one of its 2 codes"),
    ]:
        assert main(["translate", "-m", str(run), "-i", str(source), *flags]) != 0
        error = capsys.readouterr().err.strip().splitlines()
        assert message in error[-1], error
    with pytest.raises(RosettaError, match="translates into en only"):
        load_translator(imported, "cpu").for_language("fra")


@pytest.mark.reference
def test_ctranslate2_translates_an_imported_run_as_rosetta(imported):
    pytest.importorskip("ctranslate2")
    texts = sentences("de", 100, "val")
    options = SearchOptions(max_len_a=0, max_len_b=LIMIT)
    ours = load_translator(imported, "cpu").translate(texts, options)
    engine = load_translator(imported, "cpu", engine="ctranslate2")
    assert engine.translate(texts, options) == ours


def test_every_command_reads_an_imported_run(imported, tmp_path, capsys):
    texts = sentences("de", 5, "val")
    source, reference = tmp_path / "src.de", tmp_path / "ref.en"
    source.write_text("\n".join(texts) + "\n")
    reference.write_text("\n".join(sentences("en", 5, "val")) + "\n")
    model = ["-m", str(imported)]
    out = tmp_path / "out.en"
    assert main(["translate", *model, "-i", str(source), "-o", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 5
    assert (
        main(["evaluate", *model, "--src", str(source), "--ref", str(reference)]) == 0
    )
    assert "BLEU" in capsys.readouterr().out
    average = tmp_path / "average"
    assert main(["average", *model, "--last", "1", "-o", str(average)]) == 0
    assert main(["translate", "-m", str(average), "-i", str(source)]) == 0
    distilled = tmp_path / "distilled.en"
    assert main(["distill", *model, "--src", str(source), "-o", str(distilled)]) == 0
    assert len(distilled.read_text().splitlines()) == 5
    run = load_translator(imported, "cpu")
    found = run.translate_nbest(texts[:1], SearchOptions(need_attention=True))
    assert found[0][0].attention is not None  # the web page's attention map


def finetune_config(folder: Path, imported: Path) -> Path:
    """The imported run's config.yaml with a corpus and a short schedule."""
    import yaml

    for language in ("de", "en"):
        text = "\n".join(sentences(language, 300, "val")) + "\n"
        (folder / f"domain.{language}").write_text(text)
    config = yaml.safe_load((imported / "config.yaml").read_text())
    config["data"] |= {"train": {"src": "domain.de", "tgt": "domain.en"}}
    config["train"] = {
        "max_steps": 30,
        "max_epochs": None,
        "batch_tokens": 1500,
        "warmup_steps": 5,
        "validate_every": 10,
        "keep_last": 3,
    }
    path = folder / "finetune.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_fine_tuning_starts_from_the_imported_weights(imported, tmp_path, capsys):
    from safetensors.torch import load_file

    from rosetta.runs import checkpoint as ckpt

    def weights(run: Path) -> dict[str, torch.Tensor]:
        folder = ckpt.resolve_checkpoint(run, "latest")
        return load_file(str(folder / ckpt.MODEL_FILE))

    config = finetune_config(tmp_path, imported)
    run = tmp_path / "tuned"
    command = ["train", str(config), "-o", str(run), "--init", str(imported)]
    assert main([*command, "--set", "train.max_steps=1"]) == 0
    assert "optimizer and schedule start afresh" in capsys.readouterr().out
    tuned, start = weights(run), weights(imported)
    name = "encoder.layers.0.ffn.linear1.weight"
    change = (tuned[name] - start[name]).abs().max().item()
    assert 0 < change < 0.01  # one small update away
    assert (run / "tokenizers.json").read_bytes() == (
        imported / "tokenizers.json"
    ).read_bytes()


def test_fine_tuning_another_model_section_is_one_line(imported, tmp_path, capsys):
    config = finetune_config(tmp_path, imported)
    command = ["train", str(config), "-o", str(tmp_path / "x"), "--init", str(imported)]
    assert main([*command, "--set", "model.d_ff=128"]) != 0
    error = capsys.readouterr().err.strip()
    assert "model.d_ff is 64 there and 128 with --set" in error
    assert len(error.splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_resuming_an_imported_run_points_to_init(imported, tmp_path, capsys):
    config = finetune_config(tmp_path, imported)
    assert main(["train", str(config), "-o", str(imported), "--resume"]) != 0
    assert "--init" in capsys.readouterr().err


def test_the_pages_python_loads_an_export(imported, tmp_path, monkeypatch, capsys):
    """docs/pretrained.md's transformers snippet, on an export made here."""
    page = (ROOT / "docs" / "pretrained.md").read_text()
    code = page.split("```python\n")[1].split("```")[0]
    assert main(["export", "hf", "-m", str(imported), "-o", str(tmp_path / "x")]) == 0
    capsys.readouterr()
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(code.replace('"tour/opus-mt-de-en-multi30k"', '"x"'), {})
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("['")


def test_the_server_and_its_page_take_an_imported_run(imported, multilingual):
    from fastapi.testclient import TestClient

    from rosetta.serve.app import create_app

    texts = sentences("de", 3, "val")
    translator = load_translator(imported, "cpu")
    with TestClient(create_app(translator)) as client:
        assert client.get("/").status_code == 200
        body = {"sentences": texts, "beam_size": 2, "attention": True}
        response = client.post("/translate", json=body)
        assert response.status_code == 200, response.text
        best = response.json()["translations"][0]["hypotheses"][0]
        assert torch.tensor(best["attention"]).shape[1:3] == (2, 4)  # layers, heads
    chosen = load_translator(multilingual[1], "cpu").for_language("spa")
    with TestClient(create_app(chosen)) as client:
        response = client.post("/translate", json={"sentences": texts})
        assert response.status_code == 200, response.text


@pytest.mark.reference
def test_a_model_with_a_vocabulary_per_side(tmp_path):
    marian = make_marian(tmp_path / "separate", separate=True, seed=2)
    assert (marian / "target_vocab.json").is_file()
    import_run(HF, str(marian), tmp_path / "run", log=quiet)
    translator = load_translator(tmp_path / "run", "cpu")
    assert not translator.config.model.share_embeddings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.MarianMTModel.from_pretrained(marian).eval()
        tokenizer = transformers.MarianTokenizer.from_pretrained(marian)
    texts = sentences("de", 50, "val")
    ours = translator.translate(texts, same_search(1, LIMIT))
    assert ours == hf_generate(model, tokenizer, texts, 1, LIMIT)
    assert len(set(ours)) > 5


def test_a_hub_name_downloads_only_the_models_files(marian, tmp_path, monkeypatch):
    """Offline: the Hub's download stands in, returning the local folder."""
    huggingface_hub = pytest.importorskip("huggingface_hub")
    asked = []

    def snapshot_download(name, allow_patterns):
        asked.append((name, allow_patterns))
        return str(marian)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    import_run(HF, "Helsinki-NLP/opus-mt-de-en", tmp_path / "run", log=quiet)
    [(name, patterns)] = asked
    assert name == "Helsinki-NLP/opus-mt-de-en"
    assert "model.safetensors" in patterns and "pytorch_model.bin" not in patterns
    assert "*" not in "".join(patterns)
    meta = json.loads(
        next((tmp_path / "run").glob("checkpoint-*/checkpoint.json")).read_text()
    )
    assert meta["imported"]["from"] == "Helsinki-NLP/opus-mt-de-en"


def test_import_and_training_count_the_same_parameters(marian, tmp_path, capsys):
    """The import says the parameter count training will say for the same
    model: a table shared by several names counted once."""
    from rosetta.jobs.loading import load_translator as load

    out = tmp_path / "run"
    import_run(HF, str(marian), out)
    said = capsys.readouterr().out
    count = load(out, "cpu").parameter_count
    assert f"{count / 1e6:.2f}M parameters" in said


def test_an_imports_record_is_typed(imported):
    """``imported`` in the checkpoint's metadata is a record with a type:
    where the model came from, its format and its search settings; a
    malformed one is one line, and a model trained here has none."""
    from rosetta.errors import RosettaError
    from rosetta.runs import checkpoint as ckpt

    meta = ckpt.read_meta(ckpt.resolve_checkpoint(imported), tensors=False)
    record = ckpt.imported_record(meta)
    assert record is not None and record.format.startswith("MarianMT")
    assert all(isinstance(v, int | float) for v in record.generation.values())
    assert ckpt.imported_record({}) is None
    with pytest.raises(RosettaError, match="an import's record"):
        ckpt.imported_record({"imported": {"from": ["x"], "format": "MarianMT"}})


def test_vocabularies_of_two_sizes_are_made_one():
    """MarianMT has one <pad> id for both sides: the smaller vocabulary is
    filled up before its <pad> with rows that hold no token."""
    from rosetta.families.transformer.hf.marian.exporter import FILLER, same_size

    source = {"</s>": 0, "<unk>": 1, "a": 2, "b": 3, "<pad>": 4}, [3, 1, 4, 5, 2]
    target = {"</s>": 0, "<unk>": 1, "<pad>": 2}, [3, 1, 2]
    grown_source, grown_target = same_size(source, target)
    assert grown_source == source
    assert grown_target == (
        {"</s>": 0, "<unk>": 1, "<unused2>": 2, "<unused3>": 3, "<pad>": 4},
        [3, 1, FILLER, FILLER, 2],
    )


@pytest.mark.reference
def test_a_vocabulary_per_side_exports(tmp_path):
    """Trained here with a vocabulary per side: generate() on the export
    gives Rosetta's greedy translations; a MarianMT model with a vocabulary
    per side comes back from import and export as it was."""
    from safetensors.torch import load_file

    from rosetta.jobs.run_config import load_config
    from rosetta.jobs.training import run_training
    from rosetta.runs import checkpoint as ckpt

    for language in ("de", "en"):
        text = "\n".join(sentences(language, 1000)) + "\n"
        (tmp_path / f"train.{language}").write_text(text)
    (tmp_path / "config.yaml").write_text(
        "data: {train: {src: train.de, tgt: train.en}, src_lang: de, tgt_lang: en}\n"
        "tokenizer: {vocab_size: 300, joint: false}\n"
        "model: {encoder_layers: 1, decoder_layers: 1, d_model: 32, heads: 4,\n"
        "        d_ff: 64, max_positions: 128, share_embeddings: false}\n"
        "train: {max_steps: 100, batch_tokens: 2000, warmup_steps: 10, lr: 0.003,\n"
        "        max_epochs: null, keep_last: 1}\n"
    )
    run = tmp_path / "run"
    run_training(load_config(tmp_path / "config.yaml"), run)
    translator = load_translator(run, "cpu")
    assert translator.tokenizers.src is not translator.tokenizers.tgt
    out = tmp_path / "hf"
    assert main(["export", "hf", "-m", str(run), "-o", str(out)]) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.MarianMTModel.from_pretrained(out).eval()
        tokenizer = transformers.MarianTokenizer.from_pretrained(out)
    texts = sentences("de", 50, "val")
    ours = translator.translate(texts, SearchOptions(max_len_a=0, max_len_b=LIMIT))
    theirs = generate((model, tokenizer), texts, beams=1)
    assert [" ".join(text.split()) for text in theirs] == ours

    marian = make_marian(tmp_path / "separate", separate=True, seed=2)
    import_run(HF, str(marian), tmp_path / "imported", log=quiet)
    exported = tmp_path / "exported"
    assert (
        main(["export", "hf", "-m", str(tmp_path / "imported"), "-o", str(exported)])
        == 0
    )
    import_run(HF, str(exported), tmp_path / "again", log=quiet)
    first, second = (
        load_file(str(ckpt.resolve_checkpoint(r) / ckpt.MODEL_FILE))
        for r in (tmp_path / "imported", tmp_path / "again")
    )
    assert first.keys() == second.keys()
    assert all(torch.equal(first[name], second[name]) for name in first)


def test_a_hub_that_cannot_be_reached_says_what_to_do(tmp_path, monkeypatch, capsys):
    huggingface_hub = pytest.importorskip("huggingface_hub")

    def snapshot_download(name, allow_patterns):
        raise OSError("[Errno -2] Name or service not known")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    argv = ["import", "hf", "Helsinki-NLP/opus-mt-de-en", "-o", str(tmp_path / "r")]
    assert main(argv) != 0
    said = capsys.readouterr().err.strip().splitlines()[-1]
    assert "Name or service not known" in said
    assert (
        "snapshot_download('Helsinki-NLP/opus-mt-de-en', local_dir='opus-mt-de-en')"
        in said
    )
    assert said.endswith(
        "rosetta import hf opus-mt-de-en -o RUN (a gated model also needs HF_TOKEN)"
    )
    assert not (tmp_path / "r").exists()
