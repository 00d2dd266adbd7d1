"""``-m`` on an export: a CTranslate2 export decodes on its own engine
without ``--engine``, saying so; a transformers export says how to bring it
back in."""

import pytest

from rosetta.cli import main


def test_a_ctranslate2_export_is_recognised(toy_run, tmp_path, capsys):
    pytest.importorskip("ctranslate2")
    run = toy_run("transformer")
    export = tmp_path / "ct2"
    assert main(["export", "ctranslate2", "-m", str(run), "-o", str(export)]) == 0
    source = tmp_path / "in.txt"
    source.write_text("a b c\nd e\n")
    capsys.readouterr()
    assert main(["translate", "-m", str(export), "-i", str(source)]) == 0
    found = capsys.readouterr()
    assert "--engine ctranslate2" in found.err
    argv = ["translate", "-m", str(export), "-i", str(source)]
    assert main([*argv, "--engine", "ctranslate2"]) == 0
    assert capsys.readouterr().out == found.out


def test_a_transformers_export_says_to_import_it(tmp_path, capsys):
    export = tmp_path / "hf"  # what makes a folder one: its marker file
    export.mkdir()
    (export / "source.spm").write_bytes(b"")
    source = tmp_path / "in.txt"
    source.write_text("a b c\n")
    assert main(["translate", "-m", str(export), "-i", str(source)]) != 0
    said = capsys.readouterr().err.strip().splitlines()
    assert said[-1].endswith(f"import it first: rosetta import hf {export} -o RUN")
