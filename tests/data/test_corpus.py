import gzip

import pytest

from rosetta.data import read_parallel, read_tsv
from rosetta.errors import RosettaError


def test_two_files_plain_and_gzip_with_crlf(tmp_path):
    src, tgt = tmp_path / "a.de", tmp_path / "a.en.gz"
    src.write_bytes(b"Hallo Welt\r\nGuten Tag\r\n")
    with gzip.open(tgt, "wb") as handle:
        handle.write(b"Hello world\nGood day\n")
    assert read_parallel(src, tgt) == [
        ("Hallo Welt", "Hello world"),
        ("Guten Tag", "Good day"),
    ]


def test_tsv_extra_columns_are_ignored(tmp_path):
    path = tmp_path / "c.tsv"
    path.write_text("Go.\tVa !\tCC-BY attribution\nHi.\tSalut.\n")
    assert read_tsv(path) == [("Go.", "Va !"), ("Hi.", "Salut.")]


def test_mismatched_line_counts(tmp_path):
    (tmp_path / "s").write_text("a\nb\nc\n")
    (tmp_path / "t").write_text("a\nb\n")
    with pytest.raises(RosettaError, match=r"has 3 lines but .*t has 2"):
        read_parallel(tmp_path / "s", tmp_path / "t")


def test_invalid_utf8_names_file_and_line(tmp_path):
    (tmp_path / "s").write_bytes(b"ok\nbad \xff byte\n")
    (tmp_path / "t").write_text("ok\nok\n")
    with pytest.raises(RosettaError, match=r"s:2: invalid UTF-8"):
        read_parallel(tmp_path / "s", tmp_path / "t")


def test_tsv_line_without_tab(tmp_path):
    path = tmp_path / "c.tsv"
    path.write_text("a\tb\nno tab here\n")
    with pytest.raises(RosettaError, match=r"c\.tsv:2: no tab found"):
        read_tsv(path)


def test_empty_and_missing(tmp_path):
    (tmp_path / "s").write_text("")
    (tmp_path / "t").write_text("")
    with pytest.raises(RosettaError, match="empty corpus"):
        read_parallel(tmp_path / "s", tmp_path / "t")
    with pytest.raises(RosettaError, match="file not found"):
        read_tsv(tmp_path / "missing.tsv")


def test_broken_gzip_is_a_clear_error(tmp_path):
    path = tmp_path / "broken.tsv.gz"
    path.write_bytes(b"not gzip at all")
    with pytest.raises(RosettaError, match=r"broken\.tsv\.gz: cannot be read"):
        read_tsv(path)


def test_carriage_return_only_line_ends_are_refused_not_merged(tmp_path):
    src, tgt = tmp_path / "a.src", tmp_path / "a.tgt"
    src.write_bytes(b"one\rtwo\rthree\r")
    tgt.write_bytes(b"eins\nzwei\ndrei\n")
    with pytest.raises(RosettaError, match=r"a.src:1: a carriage return inside"):
        read_parallel(src, tgt)
