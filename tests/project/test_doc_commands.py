"""Every shell command and Python block that the README, the tutorial and
the user guide show runs here, in the order the page gives them, so that a
documented command or snippet cannot fail unnoticed (a Python block runs
whole, with ``python -c``, as a reader would paste it).

Each page runs in a folder of its own laid out like the repository, on toy
data: the bundled corpora cut to their first lines, and the models the
commands train made tiny and trained for a few updates (``TINY``, added to
every ``train`` and ``prepare``). A ``yaml`` block that the text before it
names (``fr-en.yaml``) is written to that file first, as a reader would.
``NOT_RUN`` lists what is left out and why.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.paths import ROOT

PAGES = ["README.md", "docs/tutorial.md", "docs/guide.md", "docs/pretrained.md"]
TOY_LINES = 200  # of each bundled corpus file

# commands not run here (by how they begin), and why
NOT_RUN = {
    "make demo": (
        "trains for many minutes; tests/jobs/test_demo.py runs the demo's code"
    ),
    "make test": "what CI itself runs",
    "make setup": "the set-up this test already runs in",
    "make bench": "a benchmark: minutes to hours",
    "python benchmarks/": "a benchmark: minutes to hours",
    ". .venv/bin/activate": "this test puts .venv/bin on the PATH itself",
    "pip install": "the set-up this test already runs in",
    ".venv/bin/pytest": "the test suite, this test among it",
    "torchrun --nnodes": "needs several machines",
    "rosetta import hf Helsinki-NLP/": "downloads from the Hugging Face Hub; "
    "the page's offline part imports a model made here, which stands in",
    "rosetta import hf facebook/": "downloads from the Hugging Face Hub; "
    "the page's offline part imports a model made here, which stands in",
}
# what the page's tools make (the rest of benchmarks/ is never run here)
RUN_ANYWAY = (
    "python benchmarks/marian_model.py",
    "python benchmarks/multilingual_model.py",
)
# files a page assumes its reader has: the reader's own corpus
READERS_FILES = {"corpus.fr": "train.de.gz", "corpus.en": "train.en.gz"}
DEMO = "runs/demo"  # what make demo trains (left out: a tiny one stands in)
# what a command left out makes, and what stands in for it
STAND_INS = {
    "runs/quality-multi30k-de-en-transformer": "runs/de-en",
    "runs/opus-mt-de-en": "runs/opus-mt-tiny",
    "runs/nllb-200-distilled-600M": "runs/nllb-tiny",
}
# the placeholders of the guide's command templates
PLACEHOLDERS = {"CONFIG": "configs/multi30k-de-en-transformer.yaml", "RUN": "runs/run"}
TINY = [
    "model.encoder_layers=1",
    "model.decoder_layers=1",
    "model.d_model=32",
    "model.heads=2",
    "model.d_ff=64",
    "tokenizer.vocab_size=300",
    "train.max_epochs=null",
    "train.max_minutes=null",
    "train.max_steps=4",
    "train.validate_every=2",
    "train.log_every=2",
    "train.batch_tokens=600",
    "train.threads=1",
    "train.deterministic=false",  # spares each start PyTorch's compiler import
]
DOCUMENTED_PORT = "8000"  # the pages' server port; here a free one instead


@dataclass
class Step:
    """A command to run, or a file to write (``path``) from a yaml block."""

    command: str = ""
    path: str = ""
    text: str = ""
    shell: str = "sh"  # the one its block names: sh, bash, or python


def without_comment(line: str) -> str:
    """``line`` up to a ``#`` that starts a shell comment (outside quotes,
    after a space)."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index].rstrip()
    return line.rstrip()


def steps_of(page: Path) -> list[Step]:
    """The page's shell commands (continued lines joined, comments dropped)
    and the yaml files its text names, in order."""
    steps: list[Step] = []
    fence = re.compile(r"^```(\w*)\s*$")
    language, block, prose = None, [], ""
    for line in page.read_text(encoding="utf-8").splitlines():
        found = fence.match(line)
        if found and language is None:
            language, block = found[1], []
        elif found:
            if language in ("sh", "bash"):
                joined = "\n".join(block).replace("\\\n", " ")
                for command in joined.splitlines():
                    if without_comment(command):
                        command = without_comment(command)
                        steps.append(Step(command=command, shell=language))
            if language == "python":  # whole, as it is pasted
                steps.append(Step(command="\n".join(block), shell="python"))
            named = re.findall(r"`([\w./-]+\.yaml)`", prose)
            if language == "yaml" and named:
                steps.append(Step(path=named[-1], text="\n".join(block) + "\n"))
            language, prose = None, ""
        elif language is not None:
            block.append(line)
        else:
            prose += line + "\n"
    return steps


def why_not_run(command: str) -> str | None:
    if command.startswith(RUN_ANYWAY):
        return None
    return next(
        (why for start, why in NOT_RUN.items() if command.startswith(start)), None
    )


def toy_repository(folder: Path) -> None:
    """The configs as they are, the bundled corpora cut short, and the
    reader's own corpus."""
    shutil.copytree(ROOT / "configs", folder / "configs")
    (folder / "benchmarks").mkdir()
    for name in RUN_ANYWAY:
        script = name.removeprefix("python ")
        shutil.copy(ROOT / script, folder / script)
    corpora = folder / "data" / "multi30k"
    corpora.mkdir(parents=True)
    for path in sorted((ROOT / "data" / "multi30k").glob("*.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            lines = [next(handle) for _ in range(TOY_LINES)]
        with gzip.open(corpora / path.name, "wt", encoding="utf-8") as handle:
            handle.writelines(lines)
    for name, source in READERS_FILES.items():  # enough to hold 1,000 out
        with gzip.open(ROOT / "data" / "multi30k" / source, "rt") as handle:
            lines = [next(handle) for _ in range(1600)]
        (folder / name).write_text("".join(lines), encoding="utf-8")


def as_run_here(command: str, number: int, port: int) -> str:
    """The command with the guide's placeholders filled in, the server on
    ``port``, and ``TINY`` added where it trains or prepares."""
    command = command.replace(DOCUMENTED_PORT, str(port))
    if command.startswith("rosetta serve") and "--port" not in command:
        command += f" --port {port}"
    for placeholder, value in PLACEHOLDERS.items():
        value = f"{value}-{number}" if placeholder == "RUN" else value
        command = re.sub(rf"\b{placeholder}\b", value, command)
    if re.search(r"\b(rosetta|rosetta\.cli) (train|prepare)\b", command):
        # a fine-tuning keeps its starting model's sizes
        tiny = [s for s in TINY if "--init" not in command or s.startswith("train.")]
        command += "".join(f" --set {setting}" for setting in tiny)
    return command


def stand_in_for_the_demo(folder: Path, environment: dict[str, str]) -> None:
    """What ``make demo`` leaves for the pages that follow it: a model in
    ``runs/demo``, here a tiny one."""
    command = [
        "rosetta",
        "train",
        "configs/multi30k-de-en-transformer.yaml",
        "-o",
        DEMO,
        *(flag for setting in TINY for flag in ("--set", setting)),
    ]
    done = subprocess.run(
        command, cwd=folder, env=environment, capture_output=True, text=True
    )
    assert done.returncode == 0, f"the demo's stand-in: {done.stderr[-3000:]}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_server(process: subprocess.Popen, port: int, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server ended: {process.stderr.read()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.5)
    raise AssertionError("the server did not start listening")


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_every_command_the_page_shows_runs(page, tmp_path):
    toy_repository(tmp_path)
    environment = dict(os.environ)
    path = os.environ.get("PATH", "")
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{path}"
    servers: list[subprocess.Popen] = []
    ran, port = 0, free_port()
    try:
        for number, step in enumerate(steps_of(ROOT / page), start=1):
            if step.path:
                (tmp_path / step.path).write_text(step.text, encoding="utf-8")
                continue
            if why_not_run(step.command):
                continue
            if DEMO in step.command and not (tmp_path / DEMO).exists():
                stand_in_for_the_demo(tmp_path, environment)
            for needed, stand_in in STAND_INS.items():
                if needed in step.command and not (tmp_path / needed).exists():
                    shutil.copytree(tmp_path / stand_in, tmp_path / needed)
            command = as_run_here(step.command, number, port)
            if command.startswith("rosetta serve"):
                servers.append(
                    subprocess.Popen(
                        [step.shell, "-c", f"exec {command}"],
                        cwd=tmp_path,
                        env=environment,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE,
                        text=True,
                    )
                )
                wait_for_server(servers[-1], port)
                ran += 1
                continue
            done = subprocess.run(
                [step.shell, "-c", command],
                cwd=tmp_path,
                env=environment,
                input="Ein Hund läuft durch den Schnee.\n",
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, f"{page}: {command}\n{done.stderr[-3000:]}"
            ran += 1
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=60)
    assert ran >= 3, f"{page}: only {ran} commands ran"


def test_the_pages_are_read_whole_and_nothing_is_left_out_without_cause():
    steps = [step for page in PAGES for step in steps_of(ROOT / page)]
    shell = [s.command for s in steps if s.command and s.shell != "python"]
    commands = [step.command for step in steps if step.command]
    assert "rosetta prepare fr-en.yaml -o runs/fr-en" in commands
    assert any(step.path == "fr-en.yaml" for step in steps)
    assert not any("#" in command or command.endswith("\\") for command in shell)
    snippets = [step.command for step in steps if step.shell == "python"]
    assert len(snippets) >= 8 and all("import" in code for code in snippets)
    # every reason still applies to a command the pages show
    assert all(any(c.startswith(start) for c in commands) for start in NOT_RUN)
    assert sum(why_not_run(c) is None for c in commands) >= 30
