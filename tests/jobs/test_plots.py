"""Plots: each figure is written, has a sensible size, and is not blank."""

import matplotlib.image
import pytest
import torch

from rosetta.cli import main
from rosetta.errors import RosettaError
from rosetta.jobs.loading import load_translator
from rosetta.jobs.plots import (
    attention_panels,
    plot_attention,
    plot_learning_curves,
    plot_positional_encoding,
)
from rosetta.search.options import SearchOptions


def check_image(path, min_width=300, min_height=200):
    """A real picture: big enough, and more than one colour."""
    assert path.is_file()
    pixels = matplotlib.image.imread(path)  # (H, W, channels) in [0, 1]
    height, width = pixels.shape[:2]
    assert width >= min_width and height >= min_height
    rgb = pixels[..., :3]
    assert rgb.std() > 0.05, "blank image"
    assert (rgb < 0.5).mean() > 0.005, "no dark marks: axes, labels or cells"
    return width, height


@pytest.fixture(scope="module")
def translation(toy_run):
    translator = load_translator(toy_run("transformer"), device="cpu")
    [found] = translator.translate_nbest(
        ["alpha beta gamma"], SearchOptions(beam_size=2, need_attention=True)
    )
    return found[0]


def test_positional_encoding_figure(tmp_path):
    width, height = check_image(plot_positional_encoding(tmp_path / "pe.png"))
    assert width > height  # matrix and curves side by side
    svg = plot_positional_encoding(tmp_path / "pe.svg", d_model=16, dims=[0, 1])
    assert svg.read_text().lstrip().startswith("<?xml")


def test_attention_figure_one_panel_and_all_heads(translation, tmp_path):
    one = check_image(plot_attention(translation, tmp_path / "one.png"))
    grid = check_image(
        plot_attention(translation, tmp_path / "all.png", layer="all", head="all")
    )
    assert grid[0] > one[0]  # two heads side by side


def test_attention_panels_pick_layers_and_heads():
    attention = torch.rand(5, 3, 4, 7)  # (T, layers, heads, S)
    [(title, weights)] = attention_panels(attention, "last", "mean")
    assert title == "layer 3, mean of heads"
    assert torch.allclose(weights, attention[:, 2].mean(dim=1))
    assert len(attention_panels(attention, "all", "all")) == 12
    [(title, weights)] = attention_panels(attention, "2", "4")
    assert title == "layer 2, head 4" and torch.equal(weights, attention[:, 1, 3])
    for layer, head in (("0", "mean"), ("4", "mean"), ("1", "5"), ("x", "mean")):
        with pytest.raises(RosettaError, match="the model has"):
            attention_panels(attention, layer, head)


def test_learning_curves_figure(toy_run, tmp_path):
    width, height = check_image(
        plot_learning_curves(toy_run("transformer"), tmp_path / "curves.png")
    )
    assert width > 2 * height  # loss, BLEU and learning rate side by side


def test_plot_command_writes_each_figure(toy_run, tmp_path, capsys):
    run = str(toy_run("transformer"))
    assert main(["plot", "positions", "-o", str(tmp_path / "pe.png")]) == 0
    assert main(["plot", "curves", run, "-o", str(tmp_path / "c.svg")]) == 0
    arguments = ["plot", "attention", "-m", run, "alpha beta", "--beam", "3"]
    assert main([*arguments, "-o", str(tmp_path / "a.png")]) == 0
    for name in ("pe.png", "a.png"):
        check_image(tmp_path / name)
    assert (tmp_path / "c.svg").stat().st_size > 5_000


def test_plot_errors_are_one_clear_line(toy_run, tmp_path, capsys):
    run = str(toy_run("transformer"))
    log = tmp_path / "metrics.jsonl"
    log.write_text('{"kind": "train", "step": 1, "loss": 2.0, "lr": 0.1}\n{oops\n')
    cases = [
        (["plot", "positions", "-o", str(tmp_path / "pe.gif")], "unknown image format"),
        (["plot", "positions", "--d-model", "7", "-o", "x.png"], "must be even"),
        (["plot", "positions", "--dims", "80", "-o", "x.png"], "outside 0..63"),
        (["plot", "curves", str(tmp_path / "none"), "-o", "x.png"], "no training log"),
        (["plot", "curves", str(log), "-o", "x.png"], "metrics.jsonl:2: not JSON"),
        (
            ["plot", "attention", "-m", run, "alpha", "--layer", "9", "-o", "x.png"],
            "layer '9': the model has 1",
        ),
        (
            ["plot", "attention", "-m", run, "  ", "-o", "x.png"],
            "the sentence is blank",
        ),
    ]
    for arguments, message in cases:
        assert main(arguments) == 2, arguments
        error = capsys.readouterr().err
        assert message in error and "Traceback" not in error
        # one error line, after the line naming the checkpoint loaded
        lines = [x for x in error.splitlines() if not x.startswith("model: ")]
        assert len(lines) == 1 and lines[0].startswith("rosetta plot: error: ")


def test_learning_curves_of_a_short_run_without_validation_say_so(tmp_path):
    """Three training records and no validation: points drawn, an empty panel
    that says why, and learning-rate ticks in powers of ten that stay in
    their panel."""
    log = tmp_path / "metrics.jsonl"
    log.write_text(
        "".join(
            f'{{"kind": "train", "step": {s}, "loss": {9 - s}, "lr": {s * 1e-4}}}\n'
            for s in (1, 2, 3)
        )
    )
    svg = plot_learning_curves(log, tmp_path / "curves.svg").read_text()
    assert "no validation BLEU in this run" in svg
    assert "10^{-4}" in svg or "1e−4" in svg or "1e\u22124" in svg


def test_learning_curves_of_a_run_shorter_than_its_log_interval_say_so(tmp_path):
    """Only a validation record: no empty line, no empty legend entry, and
    the empty panels say why."""
    log = tmp_path / "metrics.jsonl"
    log.write_text('{"kind": "valid", "step": 5, "loss": 7.5, "bleu": null}\n')
    svg = plot_learning_curves(log, tmp_path / "curves.svg").read_text()
    assert svg.count("a run shorter than train.log_every") == 2
    assert "<!-- train -->" not in svg and "<!-- validation -->" in svg


def test_learning_curves_label_their_axes_and_name_the_bleu(tmp_path):
    log = tmp_path / "metrics.jsonl"
    log.write_text(
        '{"kind": "train", "step": 1, "loss": 9, "lr": 0.001}\n'
        '{"kind": "valid", "step": 1, "loss": 8, "bleu": 3.5}\n'
    )
    svg = plot_learning_curves(log, tmp_path / "curves.svg").read_text()
    for label in ("loss per target token (nats)", "sacreBLEU, greedy", "BLEU"):
        assert label in svg, label
