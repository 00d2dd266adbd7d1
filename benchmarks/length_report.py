"""The length study's report: bands, the table (mean and range over seeds),
per-token accuracy by output position, and the plot
(``benchmarks/length_generalisation.py`` makes the results)."""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from rosetta.data.synthetic import ARITHMETIC, parse_band


def split_names(args: argparse.Namespace) -> list[str]:
    return ["test", *(f"test-{band}" for band in args.bands)]


def band_label(name: str, args: argparse.Namespace) -> str:
    return args.train_lengths if name == "test" else name.removeprefix("test-")


def print_table(results: list[dict], args: argparse.Namespace) -> None:
    """One row per task and model: exact (per-token) accuracy per band, the
    mean over the seeds run and, with several, their range."""
    labels = [band_label(name, args) for name in split_names(args)]
    print(
        "\nExact-sequence accuracy % (per-token % in brackets); training lengths "
        f"{args.train_lengths}; with several seeds: mean [lowest-highest exact]"
    )
    print(f"\n| task | model | seeds | {' | '.join(labels)} | train min |")
    print("|---|---|---|" + "---|" * (len(labels) + 1))
    for (task, model), rows in grouped(results).items():
        cells = []
        for band in labels:
            exact = [100 * row["bands"][band]["exact"] for row in rows]
            token = [100 * row["bands"][band]["per_token"] for row in rows]
            cell = f"{statistics.mean(exact):.1f} ({statistics.mean(token):.1f})"
            if len(rows) > 1:
                cell += f" [{min(exact):.1f}-{max(exact):.1f}]"
            cells.append(cell)
        minutes = statistics.mean(row["train_minutes"] for row in rows)
        print(
            f"| {task} | {model} | {len(rows)} | {' | '.join(cells)} | {minutes:.1f} |"
        )


def grouped(results: list[dict]) -> dict[tuple[str, str], list[dict]]:
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in results:
        groups.setdefault((row["task"], row["model"]), []).append(row)
    return groups


def print_positions(
    results: list[dict], args: argparse.Namespace, bins: int = 5
) -> None:
    """Per task, the model best on the longest band: per-token accuracy by
    output position there, in ``bins`` stretches (over every seed run)."""
    longest = band_label(split_names(args)[-1], args)
    print(f"\nPer-token accuracy % by output position, band {longest}, best model")
    for task in dict.fromkeys(row["task"] for row in results):
        groups = {m: rows for (t, m), rows in grouped(results).items() if t == task}
        model = max(
            groups,
            key=lambda m: statistics.mean(
                r["bands"][longest]["exact"] for r in groups[m]
            ),
        )
        counts: list[list[int]] = []
        for row in groups[model]:
            for place, (right, total) in enumerate(
                row["bands"][longest]["by_position"]
            ):
                if place == len(counts):
                    counts.append([0, 0])
                counts[place][0] += right
                counts[place][1] += total
        width = -(-len(counts) // bins)
        cells = []
        for start in range(0, len(counts), width):
            right = sum(c[0] for c in counts[start : start + width])
            total = sum(c[1] for c in counts[start : start + width])
            end = min(start + width, len(counts))
            cells.append(f"{start + 1}-{end}: {100 * right / total:.1f}")
        print(f"- {task}, {model}: " + ", ".join(cells))


def plot(
    results: list[dict],
    args: argparse.Namespace,
    path: Path,
    models: list[str],
    bin_width: int = 10,
) -> None:
    """Exact accuracy by source length, every seed's run pooled; ``models``
    in the order that gives each its colour."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(dict.fromkeys(row["task"] for row in results))
    train_high = parse_band(args.train_lengths)[1]
    # one colour per model in every panel, whichever models a panel has
    colours = {m: plt.get_cmap("tab10")(i) for i, m in enumerate(models)}
    columns = min(3, len(tasks))
    rows = -(-len(tasks) // columns)
    figure, axes = plt.subplots(
        rows,
        columns,
        figsize=(4 * columns + 1.6, 3.2 * rows),
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    for axis in axes.flat[len(tasks) :]:
        axis.set_visible(False)
    for axis, task in zip(axes.flat, tasks, strict=False):
        for row in (r for r in results if r["task"] == task):
            bins: dict[int, list[int]] = {}
            for length, (right, count) in row["per_length"].items():
                start = (int(length) - 1) // bin_width * bin_width + 1
                total = bins.setdefault(start, [0, 0])
                total[0] += right
                total[1] += count
            starts = sorted(bins)
            axis.plot(
                [s + bin_width / 2 for s in starts],
                [100 * bins[s][0] / bins[s][1] for s in starts],
                marker=".",
                color=colours[row["model"]],
                label=row["model"],
            )
        axis.axvline(train_high, color="grey", linestyle="--", linewidth=1)
        axis.set_title(task)
        axis.set_xlabel("source length" + (" (digits)" if task in ARITHMETIC else ""))
        axis.set_ylim(-3, 103)
    for row_axes in axes:
        row_axes[0].set_ylabel("exact-sequence accuracy %")
    shown = list(dict.fromkeys(row["model"] for row in results))
    handles = [plt.Line2D([], [], color=colours[m], marker=".", label=m) for m in shown]
    figure.legend(handles=handles, fontsize="small", loc="outside right center")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    print(f"plot: {path}")
