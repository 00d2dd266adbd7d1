"""The demo: a budget in updates, an estimate first, earlier runs kept, and
what to try next at the end."""

import json
import os
import re
import sys
from pathlib import Path

from rosetta.cli import main
from rosetta.jobs import demo
from tests.support.toy import toy_config


def test_the_demo_estimates_trains_scores_and_keeps_earlier_runs(
    tmp_path, capsys, monkeypatch
):
    stamp = tmp_path / "installed"  # make's set-up, just finished: 90 s
    stamp.write_text("90\n")
    monkeypatch.setattr(demo, "SETUP_STAMP", stamp)
    _, config = toy_config(tmp_path)
    output = tmp_path / "demo"
    arguments = ["--config", str(config), "--output", str(output), "--steps", "12"]
    assert main(["demo", *arguments, "--device", "cpu"]) == 0
    first = capsys.readouterr().out
    assert re.search(r"One update takes [\d.]+ s here .* for 12 updates", first)
    # the validations and the test set are in the estimate, not left out of it
    # ... and the sentence adds up as printed
    found = re.search(
        r"about ([\d.]+) minutes for 12 updates, and about ([\d.]+) for the "
        r"validations and translating the test set: ([\d.]+) minutes in all, "
        r"after the set-up's 1\.5\.",
        first,
    )
    assert found, first
    training, decoding, total = (float(found[i]) for i in (1, 2, 3))
    assert round(training + decoding, 1) == total
    assert "done: 12 steps" in first
    assert re.search(r"^BLEU = [\d.]+", first, re.M)
    done = re.search(r"Done in ([\d.]+) min \(([\d.]+) with the set-up\)\.", first)
    assert done and round(float(done[1]) + 1.5, 1) == float(done[2])
    rosetta = Path(sys.executable).parent / "rosetta"
    assert f"{rosetta} translate -m {output}" in first
    assert f"{rosetta} serve -m {output}" in first

    os.utime(stamp, (0, 0))  # a set-up long before: not this demo's
    assert (
        main(["demo", *arguments, "--device", "cpu"]) == 0
    )  # again: the first run stays
    second = capsys.readouterr().out
    assert "set-up" not in second
    assert f"{output} holds an earlier run and is kept" in second
    assert (output / "checkpoints.json").is_file()
    assert (tmp_path / "demo-2" / "checkpoints.json").is_file()

    relative = ["--set", "model.positions=relative"]
    assert main(["demo", *arguments, "--device", "cpu", "--fresh", *relative]) == 0
    assert "holds an earlier run" not in capsys.readouterr().out
    assert not (tmp_path / "demo-3").exists()
    index = json.loads((output / "checkpoints.json").read_text())
    meta = json.loads((output / index["latest"] / "checkpoint.json").read_text())
    assert meta["config"]["model"]["positions"] == "relative"


def test_the_bundled_default_trains_relative_positions_at_a_budget_of_updates():
    default = demo.DEFAULT_CONFIG
    assert demo.short_budget_settings(default, 600, []) == ["model.positions=relative"]
    assert demo.short_budget_settings(default, None, []) == []  # the whole schedule
    chosen = ["model.positions=sinusoidal"]
    assert demo.short_budget_settings(default, 600, chosen) == []
    assert demo.short_budget_settings("configs/multi30k-de-en-gru.yaml", 600, []) == []


def test_the_estimate_counts_every_sentence_the_run_translates(tmp_path):
    """Validation at every validate_every updates and at the last one, each
    the whole validation set, and the test set once."""
    config, _ = toy_config(tmp_path, "train.validate_every=5")
    valid, test = (
        len(demo.read_corpus(config.data.valid)),
        len(demo.read_corpus(config.data.test)),
    )
    assert demo.sentences_decoded(config, 12) == 3 * valid + test  # 5, 10, 12
    assert demo.sentences_decoded(config, 10) == 2 * valid + test


def test_the_set_up_counts_where_it_ran_just_before(tmp_path):
    stamp = tmp_path / "installed"
    assert demo.setup_minutes(stamp, 1e9) is None  # no set-up stamp
    stamp.write_text("180\n")
    now = stamp.stat().st_mtime
    assert demo.setup_minutes(stamp, now + 5) == 3.0
    assert demo.setup_minutes(stamp, now + demo.SETUP_JUST_NOW + 1) is None
    stamp.write_text("")  # the stamp of an older Makefile: empty
    assert demo.setup_minutes(stamp, stamp.stat().st_mtime) is None
