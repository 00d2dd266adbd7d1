"""The tokenizer files of an imported NLLB-200, M2M100 or mBART-50 folder,
with and without ``tokenizer.json``: Rosetta's import encodes a source as
Hugging Face transformers does (the same rows of the same embedding, the
language code first), or refuses the folder in one line where transformers
reads it otherwise than the model was made (``benchmarks/multilingual_model.py``
makes the folders offline)."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest
from benchmarks.marian_model import sentences
from benchmarks.multilingual_model import LANGUAGES, make_multilingual

from rosetta.cli import main
from rosetta.data.vocab import EOS_ID
from rosetta.families import all_importers
from rosetta.jobs.importers import import_run
from rosetta.jobs.loading import load_translator

transformers = pytest.importorskip("transformers")
HF = next(importer for importer in all_importers() if importer.name == "hf")
TEXTS = [
    *sentences("de", 3, "val"),
    *sentences("en", 3, "val"),
    "Ça coûte 5 €, n'est-ce pas ?",
    "Zwei  Hunde   spielen im Schnee.",
    "Привет, мир! 你好",  # characters the tiny SentencePiece model lacks
]


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def without_tokenizer_json(folder: Path, layout: str) -> None:
    """``tokenizer.json`` removed; ``tokenizer_config.json`` as transformers
    5 saves it (``saved``), as the Hub's older folders have it (``hub``:
    the codes in ``additional_special_tokens`` and
    ``special_tokens_map.json``) or with ``added_tokens_decoder`` (as
    transformers 4 and Rosetta's export write it: ``decoder``)."""
    added = json.loads((folder / "tokenizer.json").read_text())["added_tokens"]
    (folder / "tokenizer.json").unlink()
    codes = [t["content"] for t in added if "_" in t["content"]]

    def change(config: dict) -> None:
        if layout in ("hub", "decoder"):
            config.pop("extra_special_tokens", None)
            config["additional_special_tokens"] = codes
            config["mask_token"] = {"__type": "AddedToken", "content": "<mask>"}
        if layout == "decoder":
            config["added_tokens_decoder"] = {
                str(t["id"]): {"content": t["content"], "special": True} for t in added
            }

    edit_json(folder / "tokenizer_config.json", change)
    if layout == "hub":
        stm = {"additional_special_tokens": codes}
        edit_json(folder / "special_tokens_map.json", stm.update)


# each folder: its kind, and its tokenizer files
FOLDERS = {
    "nllb": ("nllb", None),
    "nllb-decoder": ("nllb", "decoder"),
    "m2m100": ("m2m100", None),  # vocab.json: never a tokenizer.json
    "mbart50": ("mbart50", None),
    "mbart50-saved": ("mbart50", "saved"),
    "mbart50-hub": ("mbart50", "hub"),
    "mbart50-decoder": ("mbart50", "decoder"),
}


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("made")
    sizes = {"layers": 1, "d_model": 16, "d_ff": 32, "spm_lines": 800}
    return {kind: make_multilingual(kind, root / kind, **sizes) for kind in LANGUAGES}


def copied(made: dict[str, Path], tmp_path: Path, name: str) -> Path:
    kind, layout = FOLDERS[name]
    folder = Path(shutil.copytree(made[kind], tmp_path / name))
    if layout is not None:
        without_tokenizer_json(folder, layout)
    return folder


def reference(folder: Path):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForSeq2SeqLM.from_pretrained(str(folder))
        return model.get_input_embeddings().weight, AutoTokenizer.from_pretrained(
            str(folder)
        )


@pytest.mark.reference
@pytest.mark.parametrize("name", list(FOLDERS))
def test_a_source_is_encoded_to_the_rows_transformers_reads(made, tmp_path, name):
    """Each sentence, from each of three languages: the same tokens, each
    the row of the embedding transformers gives its id."""
    kind, layout = FOLDERS[name]
    folder = copied(made, tmp_path, name)
    assert (folder / "tokenizer.json").is_file() == (
        layout is None and kind != "m2m100"
    )
    import_run(HF, str(folder), tmp_path / "run", log=lambda *_: None)
    translator = load_translator(tmp_path / "run", "cpu")
    ours = translator.model.encoder.embedding.token.weight
    theirs, tokenizer = reference(folder)
    for code in LANGUAGES[kind]:
        tokenizer.src_lang = code
        chosen = translator.from_language(code)
        for text in TEXTS:
            expected = tokenizer(text).input_ids
            found = [*chosen.encode(text), EOS_ID]
            assert len(found) == len(expected), (text, found, expected)
            assert found[0] == chosen.tokenizers.src.language_id(code)
            assert torch_equal(ours[found], theirs[expected]), (code, text)


def torch_equal(a, b) -> bool:
    return bool((a == b).all())


def refused(folder: Path, tmp_path: Path, capsys) -> str:
    output = tmp_path / "run"
    capsys.readouterr()  # what loading the reference printed
    assert main(["import", "hf", str(folder), "-o", str(output)]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and str(folder) in error[0], error
    assert not output.exists()
    return error[0]


@pytest.mark.reference
def test_nllb_without_the_ids_of_its_codes_is_refused(made, tmp_path, capsys):
    """Without tokenizer.json or added_tokens_decoder transformers puts
    <mask> before NLLB's codes; the model (and its tokenizer.json) after."""
    folder = copied(made, tmp_path, "nllb")
    _, before = reference(folder)
    without_tokenizer_json(folder, "saved")
    _, after = reference(folder)
    ids = [t.convert_tokens_to_ids(["<mask>", "ace_Arab"]) for t in (before, after)]
    assert ids[0][0] > ids[0][1] and ids[1][0] < ids[1][1]
    error = refused(folder, tmp_path, capsys)
    assert "tokenizer.json: missing" in error and "added_tokens_decoder" in error


@pytest.mark.reference
def test_mbart50_ids_that_transformers_renumbers_are_refused(made, tmp_path, capsys):
    """Without tokenizer.json transformers numbers mBART-50's codes by its
    own list; added_tokens_decoder ids that differ are one line."""
    folder = copied(made, tmp_path, "mbart50-decoder")

    def swap(config: dict) -> None:
        decoder = config["added_tokens_decoder"]
        decoder["401"], decoder["402"] = decoder["402"], decoder["401"]

    edit_json(folder / "tokenizer_config.json", swap)
    _, tokenizer = reference(folder)
    assert tokenizer.convert_tokens_to_ids(["ar_AR", "cs_CZ"]) == [401, 402]
    error = refused(folder, tmp_path, capsys)
    assert "added_tokens_decoder gives 'cs_CZ' id 401" in error
    assert "transformers numbers it 402" in error


@pytest.mark.reference
@pytest.mark.parametrize(
    ("name", "read_as", "message"),
    [
        ("mbart50-saved", "MBartTokenizer", "as MBartTokenizer (mBART-cc25's)"),
        ("nllb", None, "as M2M100Tokenizer, which needs vocab.json"),
    ],
)
def test_a_folder_without_its_tokenizer_class_is_read_by_model_type(
    made, tmp_path, capsys, name, read_as, message
):
    """transformers then takes model_type's tokenizer: mBART-cc25's (its
    code after </s>), or M2M100's, which an NLLB folder cannot load."""
    folder = copied(made, tmp_path, name)
    edit_json(folder / "tokenizer_config.json", lambda c: c.pop("tokenizer_class"))
    if read_as is None:
        with pytest.raises(TypeError):
            reference(folder)
    else:
        assert type(reference(folder)[1]).__name__ == read_as
    assert message in refused(folder, tmp_path, capsys)
