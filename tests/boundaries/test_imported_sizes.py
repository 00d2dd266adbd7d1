"""Sizes an imported folder states are checked against its weights before
anything proportional to them is made: a ``vocab_size`` or a language
code's id of a billion is one line, not a list padded to that length (a
hang, then a ``MemoryError``). Each case runs ``rosetta import hf`` in a
process of its own under a 3 GB address-space limit."""

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
