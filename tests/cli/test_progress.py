"""Signs of life on long commands: a bar on a terminal (none on a pipe), one
summary line on stderr at the end, and ``evaluate -o`` keeping what it
scored."""

import io
import json
import re

from rosetta.cli import main
from rosetta.jobs.loading import load_translator
from rosetta.runtime.progress import SentenceProgress

SUMMARY = re.compile(
    r"^(translate|distill): (\d+) sentences, (\d+) tokens in [\d.]+ s "
    r"\([\d.,]+ sentences/s, [\d,]+ tokens/s\)$"
)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_is_drawn_on_a_terminal_only():
    for stream, drawn in ((Terminal(), True), (io.StringIO(), False)):
        progress = SentenceProgress(10, "translate", stream)
        progress.update(4)
        progress.update(6)
        progress.say_summary(tokens=57)
        lines = stream.getvalue().replace("\r", "\n").splitlines()
        assert ("| 0/10 [" in stream.getvalue()) == drawn
        assert SUMMARY.match(lines[-1]), lines[-1]


def test_a_translator_tells_its_progress_batch_by_batch(toy_run):
    translator = load_translator(toy_run("transformer"), "cpu")
    told: list[int] = []
    sentences = ["a b c", "", "d e", "c c a b", "e", "b a"]
    translator.translate(sentences, batch_size=2, progress=told.append)
    assert sum(told) == len(sentences)  # the blank line counts, at once
    assert len(told) == 1 + 3  # then each batch of two as it finishes


def test_translate_ends_with_one_summary_line(toy_run, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("a b c\nd e\n\nc c a b\n")
    run = str(toy_run("transformer"))
    for output in ([], ["-o", str(tmp_path / "out.txt")]):
        assert main(["translate", "-m", run, "-i", str(source), *output]) == 0
        said = capsys.readouterr().err.strip().splitlines()
        found = SUMMARY.match(said[-1])
        assert found and found.group(2) == "4", said
        assert "\r" not in "".join(said)  # no bar on a pipe


def test_evaluate_keeps_the_translations_it_scored(toy_run, tmp_path, capsys):
    source, reference = tmp_path / "in.txt", tmp_path / "ref.txt"
    source.write_text("a b c\nd e\n")
    reference.write_text("c b a\ne d\n")
    run = str(toy_run("transformer"))
    kept = tmp_path / "hyp.txt"
    argv = ["evaluate", "-m", run, "--src", str(source), "--ref", str(reference)]
    assert main([*argv, "-o", str(kept)]) == 0
    scores = capsys.readouterr()
    assert "BLEU" in scores.out and SUMMARY.match(scores.err.strip().splitlines()[-1])
    assert main(["translate", "-m", run, "-i", str(source)]) == 0
    assert kept.read_text() == capsys.readouterr().out
    assert main([*argv, "-o", str(kept)]) != 0  # not replaced unasked
    assert "pass --overwrite" in capsys.readouterr().err
    assert main([*argv, "-o", str(kept), "--overwrite"]) == 0
    hyp = ["evaluate", "--hyp", str(kept), "--ref", str(reference)]
    assert main([*hyp, "-o", str(tmp_path / "x")]) != 0
    assert "--output keeps the translations of --model" in capsys.readouterr().err


def test_an_nbest_list_in_text_is_one_line_per_hypothesis(toy_run, tmp_path, capsys):
    """The layout of Moses, Marian and fairseq: i ||| hypothesis ||| score."""
    source = tmp_path / "in.txt"
    source.write_text("a b c\nd e\n")
    run = str(toy_run("transformer"))
    argv = ["translate", "-m", run, "-i", str(source), "--beam", "3", "--nbest", "3"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" ||| ")[0] for line in lines] == ["0"] * 3 + ["1"] * 3
    assert main([*argv, "--format", "jsonl"]) == 0
    jsonl = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    for line, (number, text, score) in zip(
        lines,
        [
            (i, h["text"], h["normalized_score"])
            for i, j in enumerate(jsonl)
            for h in j["hypotheses"]
        ],
        strict=True,
    ):
        assert line == f"{number} ||| {text} ||| {score:.6f}"


def test_evaluate_prints_the_metrics_asked_for_in_order(tmp_path, capsys):
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("The cat sat on the mat.\n")
    ref.write_text("The cat is on the mat.\n")
    argv = ["evaluate", "--hyp", str(hyp), "--ref", str(ref)]
    assert main([*argv, "--metrics", "ter", "chrf"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" = ")[0] for line in lines] == ["TER", "chrF"]
    assert main(argv) == 0
    names = [line.split(" = ")[0] for line in capsys.readouterr().out.splitlines()]
    assert names == ["BLEU", "chrF", "TER", "BLEU-tok-lc", "sentence-BLEU"]
