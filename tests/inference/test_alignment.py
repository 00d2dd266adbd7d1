"""Word alignments from the attention (``rosetta.inference.alignment``):
pieces folded into the words of the text, the layer's strongest source
token per target token, Pharaoh output on the command line and the server."""

from __future__ import annotations

import json
import re

import pytest
import torch
from fastapi.testclient import TestClient

from rosetta.cli import main
from rosetta.inference.alignment import (
    default_layer,
    links_from_attention,
    pharaoh,
    word_of_each_token,
)
from rosetta.inference.markup import restore_markup, strip_markup
from rosetta.jobs.loading import load_translator
from rosetta.serve.app import create_app
from tests.inference.test_bans import pieces  # noqa: F401  (a fixture)


def test_each_piece_belongs_to_the_word_it_writes(pieces):  # noqa: F811
    text = "the quickest dogs jumped over lazy foxes"
    ids = pieces.encode(text)
    assert len(ids) > len(text.split())  # some words are several pieces
    owner = word_of_each_token(pieces, ids)
    assert owner == sorted(owner) and owner[-1] == len(text.split()) - 1
    for index, word in enumerate(text.split()):
        mine = [t for t, w in zip(ids, owner, strict=True) if w == index]
        assert pieces.decode(mine).strip() == word


def test_links_are_the_strongest_source_word_of_each_target_word():
    # 3 target tokens (the first two one word), 4 source tokens (the last
    # <eos>) over 3 words; 2 layers of 2 heads: the links come from layer 1
    attention = torch.zeros(4, 2, 2, 4)
    attention[:, 0, :, 0] = 1.0  # the layer below looks elsewhere
    attention[0, 1, :, 2] = 0.9  # token 0 -> source token 2 (word 1)
    attention[1, 1, 0, 1] = 0.6  # token 1 -> source token 1 (word 1), by the
    attention[1, 1, 1, 0] = 0.5  # mean of the heads, not one head's maximum
    attention[2, 1, :, 3] = 0.99  # <eos> is no word: the next strongest
    attention[2, 1, :, 0] = 0.5
    links = links_from_attention(attention, [0, 1, 1], [0, 0, 1])
    assert links == [(0, 1), (1, 0)]
    assert pharaoh(links) == "0-1 1-0"
    assert default_layer(6) == 5 and default_layer(1) == 0


def test_the_command_and_the_server_give_alignments(toy_run, tmp_path, capsys):
    run = toy_run("transformer")
    source = tmp_path / "in.txt"
    lines = ["alpha beta gamma delta", "", "kappa iota theta"]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    base = ["translate", "-m", str(run), "-i", str(source), "--alignment"]
    capsys.readouterr()
    assert main([*base, "--beam", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and out[1] == " ||| "
    for line, given in zip(out, lines, strict=True):
        text, links = line.split(" ||| ")
        for link in links.split():
            i, j = map(int, link.split("-"))
            assert 0 <= i < len(given.split()) and 0 <= j < len(text.split())
    assert main([*base, "--format", "jsonl"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    best = records[0]["hypotheses"][0]
    assert best["alignment"] and "attention" not in best  # not asked for
    translator = load_translator(run, device="cpu")
    with TestClient(create_app(translator)) as client:
        body = {"sentences": lines[:1], "alignment": True}
        answer = client.post("/translate", json=body).json()
        assert (
            answer["translations"][0]["hypotheses"][0]["alignment"]
            == (best["alignment"])
        )
        plain = client.post("/translate", json={"sentences": lines[:1]}).json()
        assert plain["translations"][0]["hypotheses"][0]["alignment"] is None


# ---- markup carried through the alignment ----------------------------------


def test_tags_come_out_with_the_words_they_enclose():
    plain, tags = strip_markup(
        '<b>big dog</b> runs <x/>home, <a href="u">f<i>a</i>st</a>'
    )
    assert plain == "big dog runs home, fast"
    assert [(t.opening, t.first, t.last) for t in tags] == [
        ("<b>", 0, 1),
        ("<x/>", 3, None),
        ("<i>", 4, 4),  # inside a word: that word
        ('<a href="u">', 4, 4),
    ]
    for bad, said in [("<b>x", "<b> is not closed"), ("x</b>", "</b> closes no <b>")]:
        with pytest.raises(ValueError, match=said):
            strip_markup(bad)
    with pytest.raises(ValueError, match="</a> closes no <a>"):
        strip_markup("<a><b>x</a></b>")  # crossing pairs


def test_tags_go_back_around_the_aligned_words():
    _, tags = strip_markup("<b>big dog</b> runs <x/>home")
    marked = restore_markup("der große Hund läuft heim", "0-1 1-2 2-3 3-4", tags)
    assert marked == "der <b>große Hund</b> läuft <x/>heim"
    _, nested = strip_markup("<a><b>x</b> y</a> z")
    assert restore_markup("X Y Z", "0-0 1-1 2-2", nested) == "<a><b>X</b> Y</a> Z"
    # words aligned to nothing: the tag goes at the end, nested as it was
    assert restore_markup("X Y Z", "2-2", nested) == "X Y Z <a><b></b></a>"


def test_the_command_carries_markup(toy_run, tmp_path, capsys):
    run = toy_run("transformer")
    source = tmp_path / "in.txt"
    source.write_text("<b>alpha beta</b> gamma\nkappa <i>iota\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["translate", "-m", str(run), "-i", str(source), "--markup"]) == 2
    assert capsys.readouterr().err.strip().endswith("in.txt:2: <i> is not closed")
    source.write_text("<b>alpha beta</b> gamma\n\nkappa<x/> iota\n", encoding="utf-8")
    assert main(["translate", "-m", str(run), "-i", str(source), "--markup"]) == 0
    marked = capsys.readouterr().out.splitlines()
    plain = load_translator(run, device="cpu").translate(
        ["alpha beta gamma", "", "kappa iota"]
    )
    assert len(marked) == 3 and marked[1] == ""
    assert marked[0].count("<b>") == marked[0].count("</b>") == 1
    assert marked[0].index("<b>") < marked[0].index("</b>")
    assert marked[2].count("<x/>") == 1
    for line, text in zip(marked, plain, strict=True):
        bare = " ".join(re.sub(r"</?\w+/?>", " ", line).split())
        assert bare == text


def test_tags_alone_and_words_the_tokenizer_splits(toy_run, tmp_path, capsys):
    """A line of tags alone keeps them; a word the tokenizer writes as
    several ("zwei´männer") is still one word of the user's."""
    run = toy_run("transformer")
    source = tmp_path / "in.txt"
    source.write_text("<x/>\nalpha <b></b>\nalpha´beta\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["translate", "-m", str(run), "-i", str(source), "--markup"]) == 0
    first, second, _ = capsys.readouterr().out.splitlines()
    assert first == "<x/>" and "<b>" in second
    assert main(["translate", "-m", str(run), "-i", str(source), "--alignment"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert all(link.startswith("0-") for link in last.split(" ||| ")[1].split())
    assert main(["translate", "-m", str(run), "-i", "/dev/zero"]) == 2
    assert "a line longer than 16 MiB" in capsys.readouterr().err
