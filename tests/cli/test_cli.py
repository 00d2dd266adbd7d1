"""End to end through the command line on a slice of real data:
prepare -> train -> translate -> evaluate."""

import json
import re
import subprocess
import sys

import pytest
import sacrebleu

from tests.support.paths import ROOT

TATOEBA = ROOT.parent / "shared" / "data" / "tatoeba" / "eng-fra-5k.tsv"


def rosetta(*args, stdin=None, check=True):
    result = subprocess.run(
        [sys.executable, "-m", "rosetta.cli", *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"rosetta {args[0]} failed:\n{result.stderr[-3000:]}")
    return result


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    if not TATOEBA.is_file():
        pytest.skip(f"{TATOEBA} not found")
    folder = tmp_path_factory.mktemp("cli")
    lines = TATOEBA.read_text(encoding="utf-8").splitlines()
    test, train = lines[::25], [line for i, line in enumerate(lines) if i % 25]
    (folder / "train.tsv").write_text("\n".join(train) + "\n", encoding="utf-8")
    (folder / "valid.tsv").write_text("\n".join(test[:60]) + "\n", encoding="utf-8")
    (folder / "test.fr").write_text("".join(t.split("\t")[1] + "\n" for t in test))
    (folder / "test.en").write_text("".join(t.split("\t")[0] + "\n" for t in test))
    (folder / "config.yaml").write_text(
        """
data: {train: {tsv: train.tsv}, valid: {tsv: valid.tsv}, max_len: 40}
tokenizer: {kind: sentencepiece, vocab_size: 1000, joint: true}
model: {encoder_layers: 2, decoder_layers: 2, d_model: 128, heads: 4, d_ff: 256,
        dropout: 0.1}
train: {batch_tokens: 1500, lr: 2.0e-3, warmup_steps: 60, max_steps: 350,
        max_epochs: null, validate_every: 175, threads: 1, log_every: 25}
"""
    )
    # The TSV is English<TAB>French; train French -> English by swapping columns.
    for name in ("train.tsv", "valid.tsv"):
        path = folder / name
        rows = [r.split("\t") for r in path.read_text().splitlines()]
        path.write_text("".join(f"{r[1]}\t{r[0]}\n" for r in rows))
    run = folder / "run"
    prepared = rosetta("prepare", folder / "config.yaml", "-o", run)
    assert "vocabulary: source 1000" in prepared.stdout
    trained = rosetta("train", folder / "config.yaml", "-o", run)
    assert "tokenizers: loaded" in trained.stdout  # reuses what prepare made
    return folder, run


@pytest.mark.slow
def test_translate_and_evaluate_beat_copying_the_source(trained):
    folder, run = trained
    found = rosetta(
        "translate", "-m", run, "-i", folder / "test.fr", "-o", folder / "hyp.en"
    )
    best = json.loads((run / "checkpoints.json").read_text())["best"]
    assert f"model: {run / best} (the run's best by validation bleu " in found.stderr
    sources = (folder / "test.fr").read_text().splitlines()
    hyps = (folder / "hyp.en").read_text().splitlines()
    refs = (folder / "test.en").read_text().splitlines()
    assert len(hyps) == len(sources)
    model_bleu = sacrebleu.corpus_bleu(hyps, [refs]).score
    copy_bleu = sacrebleu.corpus_bleu(sources, [refs]).score
    assert model_bleu > copy_bleu + 5, (model_bleu, copy_bleu)

    report = rosetta(
        "evaluate", "--hyp", folder / "hyp.en", "--ref", folder / "test.en"
    )
    shown = float(re.search(r"^BLEU = ([\d.]+)", report.stdout, re.M).group(1))
    assert shown == pytest.approx(model_bleu, abs=0.01)
    assert "chrF" in report.stdout and "sentence-BLEU" in report.stdout


@pytest.mark.slow
def test_stdin_lines_stay_aligned(trained):
    _, run = trained
    text = (
        "Je suis étudiant.\n\n   \nMerci !\n" + "très " * 400 + "\n😀\n"
        "un\u2028deux\x0ctrois\x85\r\nשלום עולם\n\x00\x07\n"
    )
    result = rosetta("translate", "-m", run, stdin=text)
    assert result.stdout.count("\n") == 9
    lines = result.stdout.split("\n")
    assert lines[1] == "" and lines[2] == ""


def test_bad_input_is_one_clear_line_without_traceback(tmp_path):
    result = rosetta("train", tmp_path / "missing.yaml", check=False)
    assert result.returncode == 2
    assert "config file not found" in result.stderr
    assert "Traceback" not in result.stderr
    result = rosetta("translate", "-m", tmp_path / "nothing", stdin="x\n", check=False)
    assert result.returncode == 2 and "no such model" in result.stderr


def test_a_mistyped_command_or_choice_gets_the_closest_one(capsys):
    from rosetta.cli import main

    assert main(["transalte"]) == 2
    assert capsys.readouterr().err == (
        "rosetta: error: unknown command 'transalte': did you mean 'translate'?\n"
    )
    assert main(["translate", "-m", "run", "--format", "jsnl"]) == 2
    assert "unknown --format 'jsnl': did you mean 'jsonl'?" in capsys.readouterr().err
    assert main(["translate", "-m", "run", "--format", "xml"]) == 2
    assert "choose one of text, jsonl" in capsys.readouterr().err


def parser_options(parser, path=("rosetta",)):
    """Every option of every (sub-)command, with the command's path."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parser_options(sub, (*path, name))
        elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield " ".join(path), action


def test_every_option_has_help_and_shows_its_default(capsys):
    from rosetta.cli import build_parser

    options = list(parser_options(build_parser()))
    assert len(options) > 80
    assert [(c, a.dest) for c, a in options if not (a.help or "").strip()] == []
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--help"])
    assert "--port PORT           TCP port (default: 8000)" in capsys.readouterr().out


def test_version():
    from importlib.metadata import version

    found = subprocess.run(
        [sys.executable, "-m", "rosetta", "--version"], capture_output=True, text=True
    )
    assert found.returncode == 0
    assert found.stdout.strip() == f"rosetta {version('rosetta-nmt')}"


def test_the_version_and_the_package_do_not_wait_for_pytorch():
    """``rosetta --version`` answers at once: nothing imports torch for it."""
    script = (
        "import sys, rosetta, rosetta.cli\n"
        "assert rosetta.cli.main(['--version']) == 0\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "assert rosetta.SearchOptions().beam_size == 1  # imported when used\n"
    )
    found = subprocess.run([sys.executable, "-c", script], capture_output=True)
    assert found.returncode == 0, found.stderr.decode()


HELP_AND_TYPOS = [
    ["--help"],
    ["--version"],
    ["transalte"],
    ["translate", "--help"],
    ["translate", "-m", "run", "--beams", "5"],
    ["train", "--help"],
    ["train", "config.yaml", "--max-stpes", "3"],
    ["export", "ctranslate2", "--help"],
    ["import", "hf", "--help"],
    *[
        [verb, "--help"]
        for verb in (
            "prepare",
            "distill",
            "evaluate",
            "average",
            "serve",
            "plot",
            "perplexity",
            "generate",
            "task",
            "export",
            "import",
        )
    ],
]


def test_help_and_typos_load_neither_pytorch_nor_a_family_s_code():
    """``rosetta --help``, every command's ``--help`` and a mistyped command
    or option answer without PyTorch (or numpy, sacrebleu, YAML) and without
    any family's model code: only the families' records and sections."""
    script = (
        "import json, sys, rosetta.cli\n"
        "found = {}\n"
        f"for argv in {HELP_AND_TYPOS!r}:\n"
        "    try:\n"
        "        rosetta.cli.main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = ('torch', 'numpy', 'sacrebleu', 'yaml', 'sentencepiece')\n"
        "loaded = sorted(m for m in sys.modules if m in heavy or (\n"
        "    m.startswith('rosetta.families.') and not m.endswith(\n"
        # the sections, and the list of position schemes a section reads
        "        ('.config', '.settings', '.files', '.family', '.positions'))\n"
        "    and m.count('.') > 2 and m.rsplit('.', 1)[1] not in (\n"
        "        'ctranslate2', 'marian')))\n"
        "print(json.dumps(loaded))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True
    )
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout.splitlines()[-1]) == []


def test_a_source_tree_not_installed_runs_and_says_so(monkeypatch, capsys):
    """Run from ``src/`` (a GPU machine with no network), with no package
    metadata: commands still run, and ``--version`` says where it runs from."""
    import importlib.metadata

    import rosetta.cli

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert rosetta.cli.main(["--version"]) == 0
    assert "not installed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["translate", "-m", "run", "--beams", "5"], "did you mean --beam?"),
        (["train", "c.yaml", "--resmue"], "did you mean --resume?"),
        (["serve", "-m", "run", "--prot", "80"], "did you mean --port?"),
        (
            ["export", "ctranslate2", "-m", "r", "-o", "o", "--quantisation"],
            "did you mean --quantization?",
        ),
    ],
)
def test_a_mistyped_option_gets_the_commands_closest_and_its_help(
    capsys, argv, expected
):
    import rosetta.cli

    assert rosetta.cli.main(argv) == 2
    err = capsys.readouterr().err
    prog = " ".join(["rosetta", *argv[: 2 if argv[0] == "export" else 1]])
    assert err.startswith(f"{prog}: error: unknown option"), err
    assert expected in err and f"(see {prog} --help)" in err, err
    assert err.count("\n") == 1


def test_every_option_of_every_command_is_suggested_when_mistyped():
    """Each long option with an ``s`` appended (not itself an option) names
    that option as the closest."""
    import argparse

    import rosetta.cli

    def parsers(parser):
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    yield from parsers(child)

    checked = 0
    for parser in parsers(rosetta.cli.build_parser()):
        options = [o for a in parser._actions for o in a.option_strings]
        for option in options:
            if option.startswith("--") and option + "s" not in options:
                message = rosetta.cli.unrecognized([option + "s"], parser)
                assert message.endswith(f"did you mean {option}?"), message
                checked += 1
    assert checked > 100


def test_a_name_holding_a_line_break_is_said_on_one_line(tmp_path, capsys):
    from rosetta.cli import main

    assert main(["translate", "-m", str(tmp_path / "run"), "-i", "no\nsuch.src"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "no\\nsuch.src: file not found" in error


def test_evaluate_scores_either_a_file_or_a_models_output(tmp_path, capsys):
    from rosetta.cli import main

    for text in ("a b\n",):
        (tmp_path / "hyp.en").write_text(text)
        (tmp_path / "ref.en").write_text(text)
    both = ["evaluate", "--hyp", str(tmp_path / "hyp.en"), "--ref"]
    both += [str(tmp_path / "ref.en"), "-m", str(tmp_path), "--src", "x"]
    assert main(both) == 2
    assert "not both" in capsys.readouterr().err
    alone = ["evaluate", "--hyp", str(tmp_path / "hyp.en"), "--ref"]
    alone += [str(tmp_path / "ref.en"), "--src", "x"]
    assert main(alone) == 2
    assert "--src goes with --model" in capsys.readouterr().err
