"""A chaos generator for the file system: random sequences of the commands
that write, pointed at random places, some killed at random moments.

Each sequence starts from a fresh copy of a workspace (a trained run, its
config and corpus, an input, a user's notes, a user's folder) and runs
``steps`` commands drawn from ``prepare``, ``train``, ``translate -o``,
``average``, ``export``, ``distill`` and ``task``, each with an output drawn
from what is there: files and folders inside the run and its checkpoints,
the inputs, the user's files, earlier outputs, names that look like
temporary ones, fresh names, ``.``. A command runs in this process, or in a
child process that gets SIGKILL after a random delay or while it pauses
between the two renames of a folder swap (``ROSETTA_TEST_SWAP_PAUSE``).

After every step the invariant is checked: every file that is not part of
the output named is byte-identical to before (nothing else is changed or
removed), and an output that existed is still there, old or new, once the
journal of an interrupted swap has been completed (as the next command on
that output does).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rosetta.cli import main
from rosetta.runtime.atomic import finish_swap
from tests.support.paths import ROOT
from tests.support.tamper import tamper

TINY = ["--set", "train.max_epochs=null", "--set", "train.max_steps=2"]
TINY += ["--set", "train.validate_every=1", "--set", "train.threads=1"]


def snapshot(folder: Path) -> dict[str, str]:
    """Every file (and link) under ``folder``: its SHA-256, or its target."""
    found = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            found[name] = "link:" + os.readlink(path)
        elif path.is_file():
            found[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def make_workspace(template_run: Path, config: Path, folder: Path) -> None:
    """The places a sequence starts from (``folder`` is new)."""
    folder.mkdir(parents=True)
    shutil.copytree(template_run, folder / "run")
    shutil.copytree(template_run, folder / "other")
    shutil.copy(config, folder / "toy.yaml")
    for corpus in config.parent.glob("*.src"):
        shutil.copy(corpus, folder / corpus.name)
        shutil.copy(
            corpus.with_suffix(".tgt"), folder / corpus.with_suffix(".tgt").name
        )
    (folder / "in.txt").write_text("alpha beta\nzeta eta\n")
    (folder / "notes.txt").write_text("a user's notes\n")
    (folder / "mine").mkdir()
    (folder / "mine" / "thesis.tex").write_text("keep me\n")
    (folder / ".avg.tmp").mkdir()
    (folder / ".avg.tmp" / "x").write_text("a user's hidden folder\n")
    (folder / "out.txt.partial").write_text("a user's partial\n")


def candidate_outputs(workspace: Path, rng: random.Random) -> list[str]:
    """Places a careless or adversarial user might name, relative paths, of
    one kind drawn first (so that the run's many files do not crowd out the
    rest): inside the run and its checkpoints; the inputs and the user's
    files; fresh names and earlier outputs; tricky names."""
    there = [
        str(path.relative_to(workspace))
        for path in workspace.rglob("*")
        if not any(part.startswith(".") for part in path.relative_to(workspace).parts)
    ]
    inside_run = [name for name in there if name.startswith("run/")]
    users = [*INPUTS, "notes.txt", "mine", "mine/thesis.tex", ".avg.tmp"]
    users += ["out.txt.partial", *(n for n in there if "notes-" in n)]
    fresh = ["out.txt", "avg", "ct2", "tk", "run2", "new/deeper/out.txt", ".avg"]
    fresh += [
        n
        for n in there
        if not n.startswith(("run", "other")) and n not in users  # other: unnamed
    ]
    tricky = [".", "run/avg", "run/out.txt", "mine/out", "run", ".."]
    return rng.choice([inside_run, users, fresh, fresh, tricky])


INPUTS = ("in.txt", "toy.yaml", "1.src", "1.tgt", "2.src", "2.tgt")


@dataclass
class Step:
    argv: list[str]  # a command, or [] for the user's own write
    outputs: list[str]  # what the command may write: its output, its partials
    killed: str = ""  # "", "delay", "swap"
    delay: float = 0.0
    user_file: str = ""  # the user's own write: this file, new
    tamper_seed: int | None = None  # the tamperer's turn (``tests/support/tamper.py``)


# What a folder output records it is (``.rosetta-output.json``), and the
# command that writes it again.
REWRITE = {
    "an averaged checkpoint": ["average", "-m", "run", "--last", "2"],
    "a CTranslate2 export": ["export", "ctranslate2", "-m", "run"],
    "a task written by rosetta task": [
        *("task", "copy", "--count", "30", "--valid", "5", "--test", "5"),
        "--bands",
    ],
}


def earlier_folder_outputs(workspace: Path) -> list[tuple[str, list[str]]]:
    """(folder, the command that writes it again) of every folder output a
    command wrote in ``workspace``."""
    found = []
    for record in sorted(workspace.rglob(".rosetta-output.json")):
        if record.is_symlink() or not record.is_file():  # the tamperer's
            continue
        with contextlib.suppress(ValueError, OSError, TypeError, KeyError):
            kind = json.loads(record.read_text())["kind"]
            if kind in REWRITE:
                found.append((str(record.parent.relative_to(workspace)), REWRITE[kind]))
    return found


def follow_up(tampered: str, rng: random.Random) -> Step | None:
    """The command most likely to trip over what the tamperer just did: one
    on the run, or on the output whose record or journal it changed."""
    path = Path(tampered.removeprefix("tampered ").split(":")[0])
    killed = rng.choice(["", "", "delay"])
    if path.parts and path.parts[0] == "run":
        argv = ["train", "toy.yaml", "-o", "run", *TINY, "--resume"]
        return Step(argv, ["run"], killed, rng.uniform(0.5, 4.0))
    if path.name == ".rosetta-written.json":
        out = str(path.parent / rng.choice(["notes.txt", "out.txt", "thesis.tex"]))
        argv = ["translate", "-m", "run", "-i", "in.txt", "-o", out, "--overwrite"]
        return Step(argv, [out], killed, rng.uniform(0.5, 4.0))
    if path.name.endswith(".swap.json") or path.name == ".rosetta-output.json":
        out = path.parent
        if path.name.endswith(".swap.json"):
            out = path.parent / path.name[1 : -len(".swap.json")]
        argv = [*rng.choice(list(REWRITE.values())), "-o", str(out), "--overwrite"]
        return Step(argv, [str(out)], killed, rng.uniform(0.5, 4.0))
    return None


def draw_step(
    workspace: Path, rng: random.Random, tampering: float, pending: Step | None
) -> Step:
    if pending is not None and rng.random() < 0.8:
        return pending
    if rng.random() < tampering:
        return Step([], [], tamper_seed=rng.randrange(10**9))
    if rng.random() < 0.15:  # the user puts notes of their own somewhere
        folders = [workspace, *(p for p in workspace.rglob("*") if p.is_dir())]
        # (not inside Rosetta's own hidden temporary folders)
        folders = [p for p in folders if not p.name.startswith(".")]
        place = rng.choice(folders).relative_to(workspace)
        name = f"notes-{rng.randrange(10**6)}.txt"
        return Step([], [], user_file=str(place / name))
    earlier = earlier_folder_outputs(workspace)
    if earlier and rng.random() < 0.25:  # replaced, killed between the renames
        out, argv = rng.choice(earlier)
        return Step([*argv, "-o", out, "--overwrite"], [out], "swap")
    out = rng.choice(candidate_outputs(workspace, rng))
    over = ["--overwrite"] if rng.random() < 0.7 else []
    verb = rng.choice(
        ["translate", "translate", "average", "export", "distill", "task", "train"]
    )
    outputs = [out]
    if verb == "translate":
        argv = ["translate", "-m", "run", "-i", "in.txt", "-o", out, *over]
    elif verb == "distill":
        argv = ["distill", "-m", "run", "--src", "in.txt", "-o", out, *over]
        if (workspace / f"{out}.partial.json").is_file():  # an earlier distill's
            outputs += [f"{out}.partial", f"{out}.partial.json"]
    elif verb in ("average", "export", "task"):
        argv = [*REWRITE[KINDS[verb]], "-o", out, *over]
    else:
        argv = ["train", "toy.yaml", "-o", out, *TINY]
        argv += ["--resume"] if rng.random() < 0.3 else []
    kill = rng.random()
    killed = "" if kill < 0.5 else ("delay" if kill < 0.85 else "swap")
    return Step(argv, outputs, killed, rng.uniform(0.3, 4.0))


KINDS = {
    "average": "an averaged checkpoint",
    "export": "a CTranslate2 export",
    "task": "a task written by rosetta task",
}


def run_step(step: Step, workspace: Path) -> str:
    """Run ``step`` in ``workspace``; what happened, in a word."""
    if step.user_file:
        (workspace / step.user_file).write_text("the user's own\n")
        return "user"
    if step.tamper_seed is not None:
        return "tampered " + tamper(workspace, random.Random(step.tamper_seed))
    if not step.killed:
        quiet = io.StringIO()
        cwd = Path.cwd()
        os.chdir(workspace)
        try:
            with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                status = main(step.argv)
        finally:
            os.chdir(cwd)
        return f"exit {status}"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    if step.killed == "swap":
        env["ROSETTA_TEST_SWAP_PAUSE"] = "30"
    child = subprocess.Popen(
        [sys.executable, "-m", "rosetta.cli", *step.argv],
        cwd=workspace,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + (20 if step.killed == "swap" else step.delay)
    where = "killed"
    while child.poll() is None and time.monotonic() < deadline:
        if step.killed == "swap" and list(workspace.rglob(".*.swap.json")):
            time.sleep(0.05)  # into the pause between the renames
            where = "killed between renames"
            break
        time.sleep(0.02)
    if child.poll() is not None:
        return f"exit {child.returncode} before the kill"
    child.send_signal(signal.SIGKILL)
    child.wait()
    return where


def is_part_of(name: str, outputs: list[str], workspace: Path) -> bool:
    """Whether the file ``name`` (relative) is one of ``outputs`` or inside one."""
    path = (workspace / name).resolve()
    for output in outputs:
        place = (workspace / output).resolve()
        if path == place or place in path.parents:
            return True
    return False


@dataclass
class Outcome:
    steps: int = 0
    killed: int = 0
    between_renames: int = 0
    violations: list[str] = field(default_factory=list)


def protected(name: str, step: Step) -> bool:
    """Whether ``name`` is in what no command but its own may change: the
    run (its own ``train -o run`` may) and the inputs."""
    trains_run = step.argv[:1] == ["train"] and step.outputs == ["run"]
    if name.startswith("other/"):
        return True
    return name in INPUTS or (name.startswith("run/") and not trains_run)


def may_change(name: str, step: Step, made: dict[str, str], workspace: Path) -> bool:
    """Whether ``step`` may change or remove the file ``name``: part of its
    output and written by the same command (``--overwrite`` replaces only
    that), or Rosetta's own bookkeeping and leftovers (hidden names a
    command made: records, journals, temporary folders)."""
    by = made.get(name)
    if by not in (None, "user") and any(p.startswith(".") for p in Path(name).parts):
        return True
    if protected(name, step):
        return False
    return is_part_of(name, step.outputs, workspace) and by == step.argv[0]


def check_step(
    step: Step,
    before: dict[str, str],
    workspace: Path,
    existed: list[str],
    made: dict[str, str],
) -> list[str]:
    """The invariant after ``step`` (see the module docstring); notes in
    ``made`` which command wrote each file that is new or changed."""
    for output in step.outputs:  # what the next command on it would do first
        with contextlib.suppress(Exception):
            finish_swap(workspace / output)
    after = snapshot(workspace)
    problems = []
    command = " ".join(step.argv) or f"the user writes {step.user_file}"
    for name, digest in before.items():
        if after.get(name) != digest and not may_change(name, step, made, workspace):
            what = "removed" if name not in after else "changed"
            problems.append(f"{command}: {name} {what}")
    for output in existed:
        if not (workspace / output).exists():
            problems.append(f"{command}: the output {output} is gone")
    by = "tamper" if step.tamper_seed is not None else "user"
    for name, digest in after.items():
        if before.get(name) != digest:
            made[name] = step.argv[0] if step.argv else by
    return [] if step.tamper_seed is not None else problems


def run_sequence(
    template_run: Path,
    config: Path,
    folder: Path,
    seed: int,
    steps: int,
    tampering: float = 0.0,
) -> Outcome:
    """One random sequence of ``steps`` commands from a fresh workspace, a
    share ``tampering`` of them the tamperer's turns."""
    rng = random.Random(seed)
    workspace = folder / f"seq-{seed}"
    make_workspace(template_run, config, workspace)
    outcome = Outcome()
    made = {name: "train" for name in snapshot(workspace / "run")}
    made = {f"run/{name}": by for name, by in made.items()}
    pending = None
    for _ in range(steps):
        step = draw_step(workspace, rng, tampering, pending)
        before = snapshot(workspace)
        existed = [o for o in step.outputs if (workspace / o).exists()]
        happened = run_step(step, workspace)
        tampered = step.tamper_seed is not None
        pending = follow_up(happened, rng) if tampered else None
        outcome.steps += 1
        outcome.killed += happened.startswith("killed")
        outcome.between_renames += happened == "killed between renames"
        outcome.violations += [
            f"seed {seed}, {happened}: {problem}"
            for problem in check_step(step, before, workspace, existed, made)
        ]
    shutil.rmtree(workspace, ignore_errors=True)
    return outcome
