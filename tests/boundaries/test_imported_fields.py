"""Fields of an imported NLLB-200 or M2M100 folder: each reads as
transformers reads it, or is one line naming the file and field.

Sizes are checked against the weights before anything proportional to them
is made: a ``vocab_size`` or a language code's id of a billion is one line,
not a list padded to that length (a hang, then a ``MemoryError``). Each such
case runs ``rosetta import hf`` in a process of its own under a 3 GB
address-space limit."""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")  # makes the folders

LIMIT = 3 * 1024**3
HUGE = 10**9


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    from benchmarks.multilingual_model import make_multilingual

    root = tmp_path_factory.mktemp("multilingual")
    return {kind: make_multilingual(kind, root / kind) for kind in ("nllb", "m2m100")}


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def vocab_size(value: int):
    def change(folder: Path) -> None:
        edit_json(folder / "config.json", lambda c: c.update(vocab_size=value))

    return change


def language_id(value: int):
    """The first language code of NLLB-200's tokenizer.json given ``value``."""

    def change(folder: Path) -> None:
        def move(data: dict) -> None:
            code = next(t for t in data["added_tokens"] if "_" in t["content"])
            code["id"] = value

        edit_json(folder / "tokenizer.json", move)
        config = folder / "tokenizer_config.json"
        edit_json(config, lambda c: c.pop("added_tokens_decoder", None))

    return change


CASES = {
    "nllb-vocab-size": ("nllb", vocab_size(HUGE), "vocab_size"),
    "m2m100-vocab-size": ("m2m100", vocab_size(5 * 10**7), "vocab_size"),
    "nllb-language-id": ("nllb", language_id(HUGE), "1,000,000,000"),
}


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


@pytest.mark.parametrize("case", list(CASES))
def test_a_size_beyond_the_weights_is_one_line_before_any_allocation(
    folders, tmp_path, case
):
    kind, change, named = CASES[case]
    folder = tmp_path / kind
    shutil.copytree(folders[kind], folder)
    change(folder)
    argv = ["import", "hf", str(folder), "-o", str(tmp_path / "run")]
    done = subprocess.run(
        [sys.executable, "-m", "rosetta.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limited,
        check=False,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(lines) == 1 and named in lines[0] and str(folder) in lines[0], lines
    assert not (tmp_path / "run").exists()


def tokenizer_config(**fields):
    def change(folder: Path) -> None:
        edit_json(folder / "tokenizer_config.json", lambda c: c.update(fields))

    return change


def two_codes_one_id(folder: Path) -> None:
    def share(data: dict) -> None:
        codes = [t for t in data["added_tokens"] if "_" in t["content"]]
        codes[1]["id"] = codes[0]["id"]

    edit_json(folder / "tokenizer.json", share)


REFUSED = {
    # transformers takes any truthy value as true: the code after </s>
    "legacy-yes": (tokenizer_config(legacy_behaviour="yes"), "legacy_behaviour"),
    "legacy-one": (tokenizer_config(legacy_behaviour=1), "legacy_behaviour"),
    "class-not-a-name": (tokenizer_config(tokenizer_class=["x"]), "tokenizer_class"),
    "two-codes-one-id": (two_codes_one_id, "gives id"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_field_read_otherwise_than_transformers_reads_it_is_refused(
    folders, tmp_path, capsys, case
):
    from rosetta.cli import main

    change, named = REFUSED[case]
    folder = shutil.copytree(folders["nllb"], tmp_path / "nllb")
    change(folder)
    assert main(["import", "hf", str(folder), "-o", str(tmp_path / "run")]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and named in error[0], error
    assert not (tmp_path / "run").exists()


def test_a_true_legacy_behaviour_is_refused_as_transformers_reads_it(
    folders, tmp_path, capsys
):
    from rosetta.cli import main

    folder = shutil.copytree(folders["nllb"], tmp_path / "nllb")
    tokenizer_config(legacy_behaviour=True)(folder)
    assert main(["import", "hf", str(folder), "-o", str(tmp_path / "run")]) == 2
    assert "after </s>" in capsys.readouterr().err
