"""The records of a run that Rosetta reads back (JSON: the index
``checkpoints.json``, ``tokenizers.json``, the token store's manifest, a
checkpoint's ``checkpoint.json`` with its trainer and optimizer state).
Each is edited as a careless tool would, or damaged by generated means: a
key removed, a value of another type, the file cut short, another kind of
JSON, nesting past any parser's stack; checksums are recomputed where a
file carries them, so only the schema can tell. And each file is replaced
by a link (to an intact copy: a link is not followed) or a FIFO (which must
not block).

The promise: the command that reads the file works (the damage did not
matter) or refuses in one line naming the file and what is wrong, exit
status 2; never a traceback, never a silently wrong result.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
from hypothesis import HealthCheck, given, settings

from rosetta.cli import main
from rosetta.runs.checkpoint import read_index
from rosetta.runs.integrity import seal_meta
from tests.runs.test_integrity import edit_meta, resealed
from tests.runtime.test_outputs import run_refused
from tests.support.read_back import command, damage, latest, translate

# derandomized, as every property test here (tests/conftest.py)
SETTINGS = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


# (file inside the run, whether checksums are recomputed, the command)
FILES = [
    ("checkpoints.json", False, "translate"),
    ("tokenizers.json", False, "resume"),
    ("store/manifest.json", False, "resume"),
    ("LATEST/checkpoint.json", True, "translate"),
    ("LATEST/checkpoint.json", True, "resume"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "resealed", "which"), FILES)
def test_damaged_run_files_are_one_line_or_harmless(
    toy_run, tmp_path_factory, capsys, name, resealed, which
):
    template = toy_run("transformer")
    path_in_run = name.replace("LATEST", read_index(template)["latest"])
    original = json.loads((template / path_in_run).read_text())

    @SETTINGS
    @given(damaged=damage(original))
    def check(damaged):
        work = tmp_path_factory.mktemp("fuzz")
        run = work / "run"
        shutil.copytree(template, run)
        if resealed and isinstance(damaged, dict):
            damaged = seal_meta(
                {k: v for k, v in damaged.items() if k != "meta_sha256"}
            )
        text = damaged if isinstance(damaged, str) else json.dumps(damaged)
        (run / path_in_run).write_text(text)
        argv = command(template, run, work, which)
        if which == "resume":
            argv += ["--set", "train.max_steps=61"]
        capsys.readouterr()
        status = main(argv)
        err = capsys.readouterr().err
        assert "Traceback" not in err, err
        assert status == 0 or (status == 2 and err.count("\n") <= 2), (status, err)
        shutil.rmtree(work)

    check()


def test_a_checkpoint_configuration_without_a_section_is_one_line(
    toy_run, tmp_path, capsys
):
    """Found by the damage above: a resealed checkpoint whose configuration
    lost its ``data`` section is refused in one line, not a list of keys."""
    run = tmp_path / "run"
    shutil.copytree(toy_run("transformer"), run)
    path = run / read_index(run)["best"] / "checkpoint.json"  # what translate loads
    meta = json.loads(path.read_text())
    del meta["config"]["data"]
    path.write_text(
        json.dumps(seal_meta({k: v for k, v in meta.items() if k != "meta_sha256"}))
    )
    source = tmp_path / "in.txt"
    source.write_text("alpha beta\n")
    capsys.readouterr()
    assert main(["translate", "-m", str(run), "-i", str(source)]) == 2
    err = capsys.readouterr().err
    assert "a damaged configuration (data: Field required)" in err, err
    assert err.count("\n") <= 2, err


def test_a_checkpoint_without_its_random_state_is_not_resumed(
    toy_run, tmp_path, capsys
):
    """Found by the damage above: a resealed checkpoint without ``rng`` is
    refused in one line by ``--resume`` (not a KeyError)."""
    template = toy_run("transformer")
    run = tmp_path / "run"
    shutil.copytree(template, run)
    path = run / read_index(run)["latest"] / "checkpoint.json"
    meta = json.loads(path.read_text())
    meta.pop("rng", None)
    meta.pop("rng_ranks", None)
    path.write_text(
        json.dumps(seal_meta({k: v for k, v in meta.items() if k != "meta_sha256"}))
    )
    argv = [*command(template, run, tmp_path, "resume"), "--set", "train.max_steps=61"]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "no random state of training" in err and err.count("\n") <= 2, err


@pytest.mark.slow
@pytest.mark.parametrize(("name", "resealed", "which"), FILES)
@pytest.mark.parametrize("how", ["link", "fifo"])
def test_run_files_replaced_by_links_or_fifos_are_one_line(
    toy_run, tmp_path, capsys, name, resealed, which, how
):
    template = toy_run("transformer")
    run = tmp_path / "run"
    shutil.copytree(template, run)
    path = run / name.replace("LATEST", read_index(template)["latest"])
    intact = tmp_path / "intact-copy"
    shutil.copy(path, intact)
    path.unlink()
    if how == "link":
        path.symlink_to(intact)
    else:
        os.mkfifo(path)
    argv = command(template, run, tmp_path, which)
    if which == "resume":
        argv += ["--set", "train.max_steps=61"]
    capsys.readouterr()
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2, (status, err)
    assert "Traceback" not in err and err.count("\n") <= 2, err


GARBAGE = {"kind": "sentencepiece", "model": "bm90IGEgbW9kZWw="}  # "not a model"


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda _: [], "tokenizers.json: not a run's tokenizers file (must be an"),
        (lambda state: state.pop("tokenizers") and state, "Field required"),
        (
            lambda state: state | {"tokenizers": {"joint": GARBAGE}},
            "tokenizers that cannot be loaded",
        ),
    ],
    ids=["list", "no tokenizers", "garbage model"],
)
def test_a_damaged_tokenizers_file_is_one_line(run, capsys, change, expected, tmp_path):
    path = run / "tokenizers.json"
    path.write_text(json.dumps(change(json.loads(path.read_text()))))
    meta = json.loads((latest(run) / "checkpoint.json").read_text())
    config = tmp_path / "run.yaml"
    config.write_text(json.dumps(meta["config"]))  # the run's own configuration
    run_refused(["train", str(config), "-o", str(run), "--resume"], capsys, expected)


def test_an_index_with_a_mistyped_field_is_one_line(run, tmp_path, capsys):
    index = json.loads((run / "checkpoints.json").read_text())
    index["metric"] = 5
    (run / "checkpoints.json").write_text(json.dumps(index))
    run_refused(translate(run, tmp_path), capsys, "metric: must be a valid string")


def groups(change):
    return lambda meta: change(meta["optimizer_param_groups"])


def trainer(change):
    return lambda meta: change(meta["trainer"])


@pytest.mark.parametrize(
    "change, expected",
    [
        (trainer(lambda t: t.update(stepp=t.pop("step"))), "stepp: Unexpected"),
        (trainer(lambda t: t.update(step="ten")), "step: must be a valid integer"),
        (groups(lambda g: g[0].update(betas=[0.9])), "param_groups.0.betas"),
        (groups(lambda g: g[0].update(lr="fast")), "param_groups.0.lr"),
        (groups(lambda g: g[0].pop("eps")), "not this optimizer's settings"),
        (groups(lambda g: g.append({})), "not 1 group(s) of settings"),
    ],
    ids=["renamed", "mistyped", "betas", "lr", "eps gone", "a group more"],
)
def test_a_training_state_edited_is_refused_at_resume(
    run, tmp_path, capsys, change, expected
):
    edit_meta(latest(run), resealed(change))
    meta = json.loads((latest(run) / "checkpoint.json").read_text())
    config = tmp_path / "run.yaml"
    config.write_text(json.dumps(meta["config"]))  # the run's own configuration
    argv = ["train", str(config), "-o", str(run), "--resume"]
    run_refused([*argv, "--set", "train.max_steps=61"], capsys, expected)
