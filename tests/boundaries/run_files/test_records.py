"""Generated damage to every JSON file of a run that Rosetta reads back: a
key removed, a value of another type, the file cut short, another kind of
JSON, nesting past any parser's stack; and each file replaced by a link (to
an intact copy: a link is not followed) or a FIFO (which must not block).
Checksums are recomputed where a file carries them, as a careless tool
would, so only the schema can tell. The promise: the command that reads the
file works (the damage did not matter) or refuses in one line naming the
file, exit status 2; never a traceback.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rosetta.cli import main
from rosetta.runs.checkpoint import read_index
from rosetta.runs.integrity import seal_meta

# derandomized, as every property test here (tests/conftest.py)
SETTINGS = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=4),
    st.just([]),
    st.just({}),
    st.just([[[[[]]]]]),
)


def paths_in(data, prefix=()):
    """Every key path into nested dicts."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield (*prefix, key)
            yield from paths_in(value, (*prefix, key))


@st.composite
def damage(draw, data):
    """A damaged copy of ``data`` (a dict read from JSON), or text."""
    kind = draw(st.sampled_from(["remove", "retype", "cut", "other json", "deep"]))
    if kind == "deep":  # nested past any parser's stack
        depth = draw(st.sampled_from([1_000, 100_000]))
        return "[" * depth + "]" * depth
    if kind == "cut":
        text = json.dumps(data)
        return text[: draw(st.integers(0, max(0, len(text) - 1)))]
    if kind == "other json":
        return json.dumps(draw(ODD_VALUES))
    paths = sorted(paths_in(data), key=str)
    path = draw(st.sampled_from(paths))
    copy = json.loads(json.dumps(data))
    holder = copy
    for key in path[:-1]:
        holder = holder[key]
    if kind == "remove":
        del holder[path[-1]]
    else:
        holder[path[-1]] = draw(ODD_VALUES)
    return copy


# (file inside the run, whether checksums are recomputed, the command)
FILES = [
    ("checkpoints.json", False, "translate"),
    ("tokenizers.json", False, "resume"),
    ("store/manifest.json", False, "resume"),
    ("LATEST/checkpoint.json", True, "translate"),
    ("LATEST/checkpoint.json", True, "resume"),
]


def command(template: Path, run: Path, tmp_path: Path, which: str) -> list[str]:
    """The command that reads the damaged file: ``translate``, or resuming
    with the run's own configuration (taken from the undamaged ``template``)."""
    if which == "translate":
        source = tmp_path / "in.txt"
        source.write_text("alpha beta\n")
        return ["translate", "-m", str(run), "-i", str(source)]
    latest = template / read_index(template)["latest"]
    meta = json.loads((latest / "checkpoint.json").read_text())
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps(meta["config"]))
    return ["train", str(config), "-o", str(run), "--resume"]


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
