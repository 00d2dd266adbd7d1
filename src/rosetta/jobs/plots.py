"""Figures with matplotlib: attention maps, the positional encoding, learning curves.

Each function writes one file; its suffix picks the format (``.png``, ``.svg``,
``.pdf``). Figures are built with matplotlib's object API (``Figure``, not
pyplot), so no screen, backend or global state is involved.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from pydantic import ValidationError

from rosetta.data.vocab import EOS
from rosetta.errors import RosettaError, where
from rosetta.nn.positional import positional_encoding
from rosetta.runtime.atomic import atomic_file
from rosetta.runtime.limits import reason
from rosetta.runtime.own_files import read_own
from rosetta.runtime.records import Record, parse_record
from rosetta.train.metrics import METRICS_FILE, log_record

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from rosetta.inference.text_translator import Translation

FORMATS = {".png", ".svg", ".pdf"}


def check_format(path: Path) -> Path:
    """``path`` if its suffix names an image format we write."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise RosettaError(
            f"{path}: unknown image format; use one of {', '.join(sorted(FORMATS))}"
        )
    return path


def new_figure(**options: Any) -> Figure:
    """A matplotlib figure; matplotlib is imported here, when a plot is drawn,
    so that every other command starts without it (about a second)."""
    from matplotlib.figure import Figure

    return Figure(**options)


def _save(figure: Figure, path: Path) -> Path:
    path = check_format(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path) as tmp:
        figure.savefig(tmp, dpi=150, bbox_inches="tight", format=path.suffix[1:])
    return path


def _heatmap(axes: Axes, weights: torch.Tensor, rows: list[str], columns: list[str]):
    # 0 light, the largest weight dark: the web page's colours
    image = axes.imshow(weights.numpy(), cmap="viridis_r", vmin=0.0, aspect="auto")
    axes.set_xticks(range(len(columns)), columns, rotation=60, ha="right")
    axes.set_yticks(range(len(rows)), rows)
    return image


def attention_panels(
    attention: torch.Tensor, layer: str, head: str
) -> list[tuple[str, torch.Tensor]]:
    """(title, target × source weights) for each panel to draw.

    ``attention`` is (target, layers, heads, source). ``layer``: a 1-based
    number, ``last`` or ``all``; ``head``: a 1-based number, ``mean`` or ``all``.
    """
    _, layers, heads, _ = attention.shape

    def pick(choice: str, count: int, what: str, extra: set[str]) -> list[int | str]:
        if choice in extra:
            return [choice] if choice != "all" else list(range(count))
        if choice == "last":
            return [count - 1]
        if not choice.isdigit() or not 1 <= int(choice) <= count:
            raise RosettaError(f"{what} {choice!r}: the model has {count} (1-{count})")
        return [int(choice) - 1]

    panels = []
    for k in pick(layer, layers, "layer", {"all"}):
        for h in pick(head, heads, "head", {"all", "mean"}):
            per_head = attention[:, k]  # (T, heads, S)
            if h == "mean":
                weights, name = per_head.mean(dim=1), "mean of heads"
            else:
                weights, name = per_head[:, h], f"head {h + 1}"
            panels.append((f"layer {k + 1}, {name}", weights))
    return panels


def plot_attention(
    translation: Translation, path: Path, layer: str = "last", head: str = "mean"
) -> Path:
    """Cross-attention of one translation: target tokens down, source across."""
    if translation.attention is None:
        raise RosettaError("the translation carries no attention weights")
    panels = attention_panels(translation.attention.float(), layer, head)
    rows = list(translation.tokens)
    rows += [EOS] * (translation.attention.shape[0] - len(rows))  # as the columns
    columns = translation.source_tokens
    count = len(panels)
    per_row = min(count, 4)
    lines = (count + per_row - 1) // per_row
    cell = 0.35
    figure = new_figure(
        figsize=(
            per_row * max(3.0, cell * len(columns) + 1.5),
            lines * max(2.5, cell * len(rows) + 1.5),
        ),
        layout="constrained",
    )
    axes = figure.subplots(lines, per_row, squeeze=False)
    for axis, (title, weights) in zip(axes.flat, panels, strict=False):
        image = _heatmap(axis, weights, rows, columns)
        axis.set_title(title, fontsize=10)
    for axis in list(axes.flat)[count:]:
        axis.axis("off")
    figure.colorbar(image, ax=axes, shrink=0.8, label="attention weight")
    figure.suptitle(translation.text, fontsize=11)
    return _save(figure, path)


def plot_positional_encoding(
    path: Path, d_model: int = 64, length: int = 100, dims: list[int] | None = None
) -> Path:
    """The sinusoidal encoding as a matrix, and some dimensions' curves.

    Left: PE[pos, i] for every position and dimension; low dimensions oscillate
    fast, high ones slowly. Right: columns ``dims`` (default 4–7) against the
    position, the sine and cosine of one frequency pair after another.
    """
    if d_model < 2 or d_model % 2:
        raise RosettaError(f"d_model must be even and at least 2, got {d_model}")
    dims = dims if dims is not None else [d for d in (4, 5, 6, 7) if d < d_model]
    bad = [d for d in dims if not 0 <= d < d_model]
    if bad:
        raise RosettaError(f"dimensions {bad} outside 0..{d_model - 1}")
    encoding = positional_encoding(length, d_model)  # (length, d_model)
    figure = new_figure(figsize=(12, 4.2))
    matrix, curves = figure.subplots(1, 2)
    image = matrix.imshow(encoding.numpy(), cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
    matrix.set_xlabel("encoding dimension i")
    matrix.set_ylabel("position pos")
    matrix.set_title(f"PE(pos, i), d_model = {d_model}")
    figure.colorbar(image, ax=matrix)
    positions = torch.arange(length)
    for d in dims:
        kind = "sin" if d % 2 == 0 else "cos"
        curves.plot(positions, encoding[:, d], label=f"dimension {d} ({kind})")
    curves.set_xlabel("position pos")
    curves.set_ylabel("PE(pos, i)")
    curves.set_title("per-dimension curves")
    curves.legend(loc="lower right", fontsize=8)
    return _save(figure, path)


class TrainRecord(Record):
    """What the learning curves read of a ``train`` record."""

    step: int
    loss: float
    lr: float


class ValidRecord(Record):
    """What the learning curves read of a ``valid`` record."""

    step: int
    loss: float
    bleu: float | None = None


SCHEMAS: dict[str, type[Record]] = {"train": TrainRecord, "valid": ValidRecord}


def read_metrics(path: Path, follow_links: bool = True) -> list[dict]:
    """The training log's records (``metrics.jsonl``), each checked for the
    fields the curves read, with one-line errors naming the line.

    ``follow_links``: False for the log found in a run folder, Rosetta's own
    file (``rosetta.runtime.own_files``), True for a file named directly."""
    try:
        data = read_own(path, follow_links=follow_links)
    except FileNotFoundError:
        raise RosettaError(f"{path}: no training log here") from None
    except OSError as error:
        raise RosettaError(f"{path}: unreadable ({error.strerror})") from None
    records = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = log_record(line)
        except ValidationError as error:
            syntax = error.errors()[0]["type"] == "json_invalid"
            why = reason(error).removeprefix("Invalid JSON: ")
            what = "JSON" if syntax else "a record"
            raise RosettaError(f"{where(path, number)}: not {what} ({why})") from None
        kind = record.get("kind")
        if isinstance(kind, str) and kind in SCHEMAS:
            what = f"a {kind} record"
            record = parse_record(record, SCHEMAS[kind], where(path, number), what)
            record = record.model_dump()
        records.append(record)
    if not records:
        raise RosettaError(f"{path}: the training log is empty")
    return records


def say(axes: Axes, message: str) -> None:
    """``message`` in the middle of an empty panel."""
    axes.text(0.5, 0.5, message, ha="center", va="center", transform=axes.transAxes)


def plot_learning_curves(run_dir: Path, path: Path) -> Path:
    """Loss, validation BLEU and learning rate against steps, from a run's log."""
    log = Path(run_dir)
    in_run = log.is_dir()
    records = read_metrics(log / METRICS_FILE if in_run else log, not in_run)
    train = [r for r in records if r.get("kind") == "train"]
    valid = [r for r in records if r.get("kind") == "valid"]
    figure = new_figure(figsize=(14, 3.8), layout="constrained")
    loss, bleu, rate = figure.subplots(1, 3)
    few = len(train) < 30  # a short run: show each point, not a bare line
    marker = "." if few else None
    steps = [r["step"] for r in train]
    if train:
        loss.plot(steps, [r["loss"] for r in train], marker=marker, label="train")
    if valid:
        loss.plot(
            [r["step"] for r in valid],
            [r["loss"] for r in valid],
            marker="o",
            label="validation",
        )
    loss.set_title("label-smoothed cross-entropy")
    loss.set_ylabel("loss per target token (nats)")
    if train or valid:
        loss.legend()
    scored = [r for r in valid if r.get("bleu") is not None]
    if scored:
        scores = [r["bleu"] for r in scored]
        bleu.plot([r["step"] for r in scored], scores, marker="o")
        bleu.set_ylim(0, max(5.0, 1.1 * max(scores)))  # BLEU is never negative
    else:
        say(bleu, "no validation BLEU in this run")
    # what validation computes: sacreBLEU's corpus BLEU of greedy outputs
    bleu.set_title("validation BLEU (sacreBLEU, greedy)")
    bleu.set_ylabel("BLEU")
    if train:
        rate.plot(steps, [r["lr"] for r in train], marker=marker)
    else:  # the run ended before its first log interval
        for axis in (loss, rate):
            say(axis, "no training record\n(a run shorter than train.log_every)")
    rate.ticklabel_format(axis="y", style="sci", scilimits=(-2, 3))
    rate.set_title("learning rate")
    rate.set_ylabel("learning rate")
    for axis in (loss, bleu, rate):
        axis.set_xlabel("step")
        axis.grid(alpha=0.3)
    last = max([r["step"] for r in train + valid], default=0)
    for axis in (loss, bleu, rate):
        axis.set_xlim(0, max(last, 1) * 1.02)
    return _save(figure, path)
