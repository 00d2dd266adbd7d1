"""Generated damage to the flat arrays of a run folder that Rosetta maps
again: a token store's ids and offsets (pairs, or a language model's text)
and the NAT fertilities found from word alignments, with the records that vouch for
them rewritten to fit (as a careless tool would), and the alignments file
itself. An array cut short, grown, emptied, its items swapped or set to any
value, or replaced by a link or a FIFO.

The promise: training gets exactly the intact data (the damage did not
matter, or what was damaged was made again), or a one-line refusal naming
the array; never garbage batches, an index error or a hang.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rosetta.cli import main
from rosetta.data.store import MANIFEST_FILE, STORE_DIR
from rosetta.errors import RosettaError
from rosetta.families.nat import fertilities as module
from rosetta.families.nat.training import prepare_nat
from rosetta.runtime.fingerprint import KIND, fingerprint
from rosetta.train.prepare import prepare_data, prepare_text
from tests.support.read_back import (
    DEEP,
    FUZZ,
    command,
    damage,
    fifo_in_place,
    one_line,
    works_or_one_line,
)
from tests.support.toy import NAT, toy_config, toy_lm_config

HOW = ["cut", "odd bytes", "grown", "emptied", "swapped", "set"]
MORE = settings(FUZZ, max_examples=24)  # a store's example takes milliseconds


def quiet(*_):
    pass


def reseal_store(store: Path) -> None:
    """The manifest's record of each array rewritten to fit its content."""
    manifest = json.loads((store / MANIFEST_FILE).read_text())
    for name in manifest["arrays"]:
        path = store / name
        manifest["arrays"][name] = {
            "bytes": path.stat().st_size,
            KIND: fingerprint(path),
        }
    (store / MANIFEST_FILE).write_text(json.dumps(manifest))


def damage_array(path: Path, dtype: str, how: str, where: int, value: int) -> None:
    data = np.fromfile(path, dtype)
    i = where % max(len(data), 1)
    if how == "odd bytes":
        path.write_bytes(path.read_bytes()[:-1])
        return
    if how == "cut":
        data = data[:i]
    elif how == "grown":
        data = np.concatenate([data, data[: i + 1]])
    elif how == "emptied":
        data = data[:0]
    elif how == "swapped" and len(data) > 1:
        j = (i + 1) % len(data)
        data[[i, j]] = data[[j, i]]
    elif how == "set" and len(data):
        info = np.iinfo(data.dtype)
        data[i] = min(max(value, info.min), info.max)
    data.tofile(path)


DAMAGE = st.tuples(
    st.sampled_from(HOW),
    st.integers(0, 2**20),
    st.one_of(st.integers(-(2**40), 2**40), st.integers(0, 300)),
)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """A run folder with a token store of pairs, and one of text."""
    made = {}
    for kind, make, prepare in (
        ("pairs", toy_config, prepare_data),
        ("text", toy_lm_config, prepare_text),
    ):
        folder = tmp_path_factory.mktemp(kind)
        config, _ = make(folder)
        made[kind] = (config, folder / "run", prepare(config, folder / "run", quiet))
    return made


def well_formed(found, intact) -> bool:
    """Pairs (or a text) as many as intact, of ids inside the vocabulary: an
    id changed within range, or a pair's end moved before the next pair's,
    is data a store could hold, which no check tells from the intact one."""
    counts = [len(part) for part in contents(found)]
    limit = min(len(found.tokenizers.src), len(found.tokenizers.tgt))
    ids = [i for part in contents(found) for item in part for i in flat(item)]
    return counts == [len(part) for part in contents(intact)] and max(ids) < limit


def flat(item) -> list[int]:
    return [i for side in item for i in side] if isinstance(item, tuple) else [item]


def contents(prepared) -> list:
    """What training reads of the store: every pair, or every id."""
    if hasattr(prepared, "valid_pairs"):
        return [[(e.src, e.tgt) for e in s] for s in (prepared.train, prepared.valid)]
    return [prepared.train.tolist(), prepared.valid.tolist()]


@pytest.mark.parametrize("kind", ["pairs", "text"])
def test_damaged_store_arrays_are_refused_or_harmless(stores, tmp_path_factory, kind):
    config, template, intact = stores[kind]
    prepare = prepare_data if kind == "pairs" else prepare_text
    sides = ["src", "tgt"] if kind == "pairs" else ["text"]
    names = [
        f"{split}.{side}.{array}"
        for split in ("train", "valid")
        for side in sides
        for array in ("offsets", "tokens")
    ]

    @MORE
    @given(name=st.sampled_from(names), damaged=DAMAGE)
    def check(name, damaged):
        run = tmp_path_factory.mktemp("store") / "run"
        shutil.copytree(template, run)
        dtype = "<i8" if name.endswith("offsets") else intact_dtype(run)
        damage_array(run / STORE_DIR / name, dtype, *damaged)
        reseal_store(run / STORE_DIR)
        try:
            found = prepare(config, run, quiet)
        except RosettaError as error:
            assert name in one_line(error)
        else:
            if damaged[0] in ("swapped", "set"):  # in range: other pairs' data
                assert well_formed(found, intact)
            else:
                assert contents(found) == contents(intact)
        shutil.rmtree(run)

    check()


def intact_dtype(run: Path) -> str:
    return json.loads((run / STORE_DIR / MANIFEST_FILE).read_text())["token_type"]


@pytest.mark.parametrize("how", ["link", "fifo"])
def test_a_store_array_replaced_is_refused(stores, tmp_path, how):
    config, template, _ = stores["pairs"]
    run = tmp_path / "run"
    shutil.copytree(template, run)
    path = run / STORE_DIR / "train.tgt.tokens"
    if how == "link":
        shutil.copy(path, tmp_path / "intact")
        path.unlink()
        path.symlink_to(tmp_path / "intact")
        with pytest.raises(RosettaError) as refused:
            prepare_data(config, run, quiet)
    else:
        with fifo_in_place(path) as released, pytest.raises(RosettaError) as refused:
            prepare_data(config, run, quiet)
        assert not released
    assert "train.tgt.tokens" in one_line(refused.value)


@pytest.mark.slow
def test_resuming_on_a_resealed_damaged_store_is_one_line(toy_run, tmp_path, capsys):
    template = toy_run("transformer")
    run = tmp_path / "run"
    shutil.copytree(template, run)
    damage_array(run / STORE_DIR / "train.src.offsets", "<i8", "swapped", 5, 0)
    reseal_store(run / STORE_DIR)
    capsys.readouterr()
    argv = [*command(template, run, tmp_path, "resume"), "--set", "train.max_steps=61"]
    status = main([str(a) for a in argv])
    err = capsys.readouterr().err
    works_or_one_line(status, err)
    assert status == 2 and "train.src.offsets go back" in err, err


@pytest.fixture(scope="module")
def nat(tmp_path_factory):
    """A NAT's prepared run folder: store, alignments and fertilities."""
    folder = tmp_path_factory.mktemp("nat")
    config, _ = toy_config(folder, model=NAT)
    prepare_nat(config, folder / "run", quiet)
    return config, folder / "run"


def check_fertilities(config, run: Path) -> None:
    """Training gets fertilities of its pairs (one per source token, at most
    ``max_fertility``, adding up to the target's length), or one line."""
    try:
        data = prepare_nat(config, run, quiet)
    except RosettaError as error:
        one_line(error)
        return
    for pairs, found in (
        (data.pairs.train, data.train_fertilities),
        (data.pairs.valid, data.valid_fertilities),
    ):
        assert len(found) == len(pairs)
        for i in range(len(pairs)):
            row = found[i]
            assert len(row) == pairs.src_lengths[i] and sum(row) == pairs.tgt_lengths[i]
            assert all(0 <= f <= config.model.max_fertility for f in row)


FERTILITY_FILES = [
    f"{split}.fertility.{array}"
    for split in ("train", "valid")
    for array in ("offsets", "tokens")
]


def test_damaged_fertilities_are_found_again_or_refused(nat, tmp_path_factory):
    config, template = nat

    @MORE
    @given(
        name=st.sampled_from([*FERTILITY_FILES, MANIFEST_FILE]),
        damaged=DAMAGE,
        data=st.data(),
    )
    def check(name, damaged, data):
        run = tmp_path_factory.mktemp("nat") / "run"
        shutil.copytree(template, run)
        path = run / module.FERTILITY_DIR / name
        if name == MANIFEST_FILE:
            text = data.draw(damage(json.loads(path.read_text())))
            path.write_text(text if isinstance(text, str) else json.dumps(text))
        else:
            dtype = "<i8" if name.endswith("offsets") else "u1"
            damage_array(path, dtype, *damaged)
        check_fertilities(config, run)
        shutil.rmtree(run)

    check()


LINE_DAMAGE = st.one_of(
    st.sampled_from(["", "x", "0-0 -", "99-99", "9" * 40 + "-0", "0-0\t1-1"]),
    st.text(max_size=12),
)


def test_damaged_alignments_are_made_again_or_refused(nat, tmp_path_factory):
    """With the fertilities gone, they are found from ``alignments.txt``: its
    header damaged (it is made again), or any line."""
    config, template = nat
    header, *lines = (template / module.ALIGNMENTS_FILE).read_text().splitlines()

    @FUZZ
    @given(
        line=st.integers(0, len(lines)),
        header_damage=damage(json.loads(header)),
        line_damage=LINE_DAMAGE,
    )
    @example(line=0, header_damage=DEEP, line_damage="")
    @example(line=1, header_damage="", line_damage="99-99")
    def check(line, header_damage, line_damage):
        run = tmp_path_factory.mktemp("nat") / "run"
        shutil.copytree(template, run)
        shutil.rmtree(run / module.FERTILITY_DIR)
        damaged = [header, *lines]
        if line == 0:
            text = header_damage
            damaged[0] = text if isinstance(text, str) else json.dumps(text)
        else:
            damaged[line] = " ".join(line_damage.splitlines())
        (run / module.ALIGNMENTS_FILE).write_text("\n".join(damaged) + "\n")
        check_fertilities(config, run)
        shutil.rmtree(run)

    check()


@pytest.mark.parametrize(
    "name", [module.ALIGNMENTS_FILE, "fertilities/train.fertility.tokens"]
)
@pytest.mark.parametrize("how", ["link", "fifo"])
def test_alignments_or_fertilities_replaced_are_made_again(nat, tmp_path, name, how):
    """Neither is read through a link or from a FIFO: both are made again in
    place of what was there, and a link's target is left as it was."""
    config, template = nat
    run = tmp_path / "run"
    shutil.copytree(template, run)
    if name == module.ALIGNMENTS_FILE:
        shutil.rmtree(run / module.FERTILITY_DIR)
    path = run / name
    if how == "link":
        intact = tmp_path / "intact"
        shutil.copy(path, intact)
        before = intact.read_bytes()
        path.unlink()
        path.symlink_to(intact)
        check_fertilities(config, run)
        assert intact.read_bytes() == before and not path.is_symlink()
        return
    with fifo_in_place(path) as released:
        check_fertilities(config, run)
    assert not released and path.is_file()
