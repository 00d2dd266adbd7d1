"""An ensemble of seeds against its best single run and an averaged
checkpoint, on Multi30k test_2016: BLEU and decoding time.

Staged, so that no stage outlives a machine: each ``train`` trains one seed
of the bundled configuration at the demo's CPU budget (600 updates, the
demo's settings; a checkpoint every 100 updates, the last 4 kept) into
``RUNS/seed-N``, resuming one that was interrupted and leaving a finished one
as it is; ``report`` scores whatever seeds are finished (each alone, each
run's last 4 checkpoints averaged, and the ensemble of them all), and writes
the table and its JSON beside the runs.

    python benchmarks/ensemble_quality.py train --seed 1
    python benchmarks/ensemble_quality.py train --seed 2
    python benchmarks/ensemble_quality.py train --seed 3
    python benchmarks/ensemble_quality.py report --beam 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs/multi30k-de-en-transformer.yaml"
TEST = ROOT / "data/multi30k/test_2016_flickr"
STEPS = 600
# the demo's CPU budget (rosetta.jobs.demo), with checkpoints to average
SETTINGS = (
    "model.positions=relative",
    f"train.max_steps={STEPS}",
    "train.max_epochs=null",
    "train.warmup_steps=200",
    "train.validate_every=100",
    "train.keep_last=4",
)


def finished(run: Path) -> bool:
    """Whether the run's latest checkpoint is at the budget's last update."""
    from rosetta.runs.checkpoint import read_meta, resolve_checkpoint

    if not (run / "checkpoints.json").exists():
        return False
    latest = resolve_checkpoint(run, "latest")
    return read_meta(latest, tensors=False)["trainer"]["step"] >= STEPS


def train(runs: Path, seed: int) -> None:
    run = runs / f"seed-{seed}"
    if finished(run):
        print(f"{run}: finished already")
        return
    command = [
        sys.executable,
        "-m",
        "rosetta.cli",
        "train",
        str(CONFIG),
        "-o",
        str(run),
    ]
    for setting in (*SETTINGS, f"train.seed={seed}"):
        command += ["--set", setting]
    if (run / "checkpoints.json").exists():
        command.append("--resume")
    started = time.perf_counter()
    subprocess.run(command, check=True)
    print(f"{run}: trained in {(time.perf_counter() - started) / 60:.1f} min")


def scored(translator, sources: list[str], references: list[str], beam: int) -> dict:
    from rosetta.evaluate import sacrebleu_score
    from rosetta.search.options import SearchOptions

    started = time.perf_counter()
    hypotheses = translator.translate(sources, SearchOptions(beam_size=beam))
    seconds = time.perf_counter() - started
    bleu = sacrebleu_score(hypotheses, references).score
    return {"bleu": bleu, "seconds": seconds}


def report(runs: Path, beam: int) -> None:
    from rosetta.data.corpus import read_lines
    from rosetta.jobs.loading import load_translator
    from rosetta.runs.average import average_run

    seeds = sorted(p for p in runs.glob("seed-*") if finished(p))
    if not seeds:
        raise SystemExit(f"{runs}: no finished seed; run the train stage first")
    sources = [line for _, line in read_lines(Path(f"{TEST}.de.gz"))]
    references = [line for _, line in read_lines(Path(f"{TEST}.en.gz"))]
    rows = []
    for run in seeds:
        single = scored(load_translator(run, "cpu"), sources, references, beam)
        rows.append({"model": f"{run.name} (best)", **single})
        averaged = runs / f"{run.name}-average"
        if not averaged.exists():
            average_run(run, None, averaged)
        mean = scored(load_translator(averaged, "cpu"), sources, references, beam)
        rows.append({"model": f"{run.name} (last 4 averaged)", **mean})
    if len(seeds) > 1:
        ensemble = load_translator([str(run) for run in seeds], "cpu")
        joint = scored(ensemble, sources, references, beam)
        rows.append({"model": f"ensemble of {len(seeds)} (best each)", **joint})
    best = max(r["bleu"] for r in rows if r["model"].endswith("(best)"))
    singles = [r["seconds"] for r in rows if r["model"].endswith("(best)")]
    print(f"Multi30k test_2016 de→en, {len(sources)} sentences, beam {beam}")
    print(
        f"{'model':<34} {'BLEU':>6} {'Δ best single':>14} {'seconds':>8} {'× one':>6}"
    )
    for row in rows:
        ratio = row["seconds"] / statistics.median(singles)
        print(
            f"{row['model']:<34} {row['bleu']:6.2f} {row['bleu'] - best:+14.2f} "
            f"{row['seconds']:8.1f} {ratio:6.2f}"
        )
    (runs / "report.json").write_text(json.dumps({"beam": beam, "rows": rows}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stage", choices=("train", "report"))
    parser.add_argument("--seed", type=int, help="train: the seed to train")
    parser.add_argument("--beam", type=int, default=5, help="report: beam size")
    parser.add_argument("--runs", default=str(ROOT / "runs/ensemble"))
    args = parser.parse_args()
    runs = Path(args.runs)
    if args.stage == "train":
        if args.seed is None:
            parser.error("train needs --seed")
        train(runs, args.seed)
    else:
        report(runs, args.beam)


if __name__ == "__main__":
    main()
