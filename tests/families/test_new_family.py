"""Families written outside Rosetta's source, each added by one line in the
list of families and no other edit: a translation family
(``tests/toy_family``: its own section, model and translator), on which the
whole family suite, training, translation and the server run, and a second
language-model family (``tests/toy_lm_family``: its own section and model),
which trains with ``task: lm``, scores a text and generates."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import httpx
import pytest

from tests import toy_lm_family
from tests.support.paths import ROOT
from tests.support.toy import toy_config_file, toy_lm_config_file
from tests.toy_family import FAMILY


def listing(family: str) -> list[str]:
    """A Python that lists the toy family ``family``, then runs the command
    line."""
    return [
        sys.executable,
        "-c",
        f"import sys, tests.{family}.listed; from rosetta.cli import main; "
        "sys.exit(main(sys.argv[1:]))",
    ]


ROSETTA = listing("toy_family")
ENV = os.environ | {"PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])}


def rosetta(
    *args: str, family: str = "toy_family", **options
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*listing(family), *map(str, args)],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
        **options,
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("toy-family")
    config = toy_config_file(folder, model=json.dumps(dict(FAMILY.example)))
    trained = rosetta(
        "train",
        config,
        "-o",
        folder / "run",
        *("--set", "train.max_epochs=null", "--set", "train.max_steps=20"),
    )
    assert trained.returncode == 0, trained.stderr[-2000:]
    assert "model: toy" in trained.stdout
    return folder / "run"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("family", "arch"), [("toy_family", "toy"), ("toy_lm_family", "toy-lm")]
)
def test_the_family_suite_runs_on_the_new_family(family, arch):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            f"tests.{family}.listed",
            "tests/families/test_families.py",
            "-k",
            arch,
        ],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert "3 passed" in done.stdout, done.stdout[-1000:]


@pytest.mark.slow
def test_the_new_family_trains_and_translates(run):
    sentences = "alpha beta gamma\ndelta eps\n\nkappa\n"
    done = rosetta("translate", "-m", run, input=sentences)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(done.stdout.splitlines()) == 4  # one line out per line in


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_the_new_family_is_served_with_its_attention(run):
    port = free_port()
    server = subprocess.Popen(
        [*ROSETTA, "serve", "-m", str(run), "--port", str(port)],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert server.poll() is None, server.stdout.read()[-2000:]
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.5)
        answer = httpx.post(
            f"{url}/translate",
            json={"sentences": ["alpha beta"], "attention": True},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        (result,) = answer.json()["translations"]
        best = result["hypotheses"][0]
        assert isinstance(best["text"], str)
        # one layer of one head over the source tokens, per target token
        # (and the end of the sentence, which has no id in token_ids)
        rows = best["attention"]
        assert len(rows) in (len(best["token_ids"]), len(best["token_ids"]) + 1)
        assert all(len(row[0][0]) == len(best["source_tokens"]) for row in rows)
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def lm_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("toy-lm-family")
    model = json.dumps(dict(toy_lm_family.FAMILY.example))
    config = toy_lm_config_file(folder, model=model)
    trained = rosetta("train", config, "-o", folder / "run", family="toy_lm_family")
    assert trained.returncode == 0, trained.stderr[-2000:]
    assert "model: toy-lm" in trained.stdout
    return folder / "run"


@pytest.mark.slow
def test_the_new_language_model_family_scores_and_generates(lm_run):
    text = lm_run.parent / "valid.txt"
    scored = rosetta("perplexity", "-m", lm_run, "--text", text, family="toy_lm_family")
    assert scored.returncode == 0, scored.stderr[-2000:]
    loss = float(scored.stdout.split("loss = ")[1].split()[0])
    assert 0 < loss < 4.5  # nats per character, near ln(65) = 4.17 at 12 updates
    generated = rosetta(
        "generate",
        "-m",
        lm_run,
        "--prompt",
        "ROMEO:",
        "--tokens",
        "30",
        "--seed",
        "1",
        family="toy_lm_family",
    )
    assert generated.returncode == 0, generated.stderr[-2000:]
    assert generated.stdout.startswith("ROMEO:")
    assert len(generated.stdout.rstrip("\n")) >= len("ROMEO:") + 25
