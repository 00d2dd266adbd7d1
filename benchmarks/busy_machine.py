"""Decoding commands on an idle and on a busy machine, with each thread setting.

Each command runs as a user runs it (``python -m rosetta.cli ...``, start-up
and model loading included), on an idle machine and beside ``--busy N``
CPU-bound processes (``benchmarks/busy.py``), once with the thread policy's
default (``--threads auto``: the cores other work leaves free) and once with
PyTorch's own default (one thread per core, given as ``--threads`` that
number). Settings are interleaved, ``--repeats`` times each; the table gives
the median wall time, the range, and each busy time as a multiple of the
same setting's idle time.

The models are the bundled configurations' shapes (the Multi30k Transformer,
the laptop Transformer-XL), trained for ``--updates`` updates unless
``--translation-run`` and ``--lm-run`` name trained runs: the time per
sentence depends on how long the outputs are, hardly on how good they are.

    python benchmarks/busy_machine.py --busy 2
    python benchmarks/busy_machine.py --translation-run runs/de-en --lm-run runs/lm
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import ROOT, competing_load
from rosetta.runtime.threads import cores

TRANSLATION_CONFIG = ROOT / "configs" / "multi30k-de-en-transformer.yaml"
LM_CONFIG = ROOT / "configs" / "tinyshakespeare-char-xl-cpu.yaml"
MULTI30K = ROOT / "data" / "multi30k"
SHAKESPEARE = ROOT / "data" / "tinyshakespeare"
ONE_BEAM = ["--refill", "--stopping", "k_finished"]


def rosetta(*args: str) -> subprocess.CompletedProcess:
    """The command run to its end (translations to standard output)."""
    done = subprocess.run(
        [sys.executable, "-m", "rosetta.cli", *args], capture_output=True, text=True
    )
    if done.returncode:
        sys.exit(f"rosetta {' '.join(args)} failed:\n{done.stderr}")
    return done


def train(config: Path, run_dir: Path, updates: int) -> Path:
    """``config``'s model trained for ``updates`` updates, validated once."""
    if not (run_dir / "checkpoints.json").exists():
        print(f"training {config.name} for {updates} updates into {run_dir}")
        rosetta(
            "train",
            str(config),
            "-o",
            str(run_dir),
            "--set",
            f"train.max_steps={updates}",
            "--set",
            "train.max_epochs=null",
            "--set",
            "train.max_minutes=null",
            "--set",
            f"train.validate_every={updates}",
        )
    return run_dir


def unzipped(path: Path, folder: Path) -> Path:
    plain = folder / path.with_suffix("").name
    plain.write_bytes(gzip.decompress(path.read_bytes()))
    return plain


def commands(translation: Path, lm: Path, folder: Path) -> dict[str, list[str]]:
    """What is timed, by name: the commands a user runs to decode."""
    source = unzipped(MULTI30K / "test_2016_flickr.de.gz", folder)
    reference = unzipped(MULTI30K / "test_2016_flickr.en.gz", folder)
    model = ["-m", str(translation)]
    exported = folder / "ctranslate2"
    rosetta("export", "ctranslate2", *model, "-o", str(exported))
    engine = ["-m", str(exported), "--engine", "ctranslate2"]
    return {
        "translate greedy": ["translate", *model, "-i", str(source)],
        # the beam both engines have: k live prefixes, ends when k have ended
        "translate beam 5": [
            "translate", *model, "-i", str(source), "--beam", "5", *ONE_BEAM
        ],
        "translate beam 5, CTranslate2": [
            "translate", *engine, "-i", str(source), "--beam", "5", *ONE_BEAM
        ],
        "evaluate beam 5": [
            "evaluate", *model, "--src", str(source), "--ref", str(reference),
            "--beam", "5",
        ],
        "perplexity": [
            "perplexity", "-m", str(lm), "--text",
            str(SHAKESPEARE / "valid.txt.gz"),
        ],
        "generate 500": [
            "generate", "-m", str(lm), "--prompt", "ROMEO:", "--tokens", "500",
            "--seed", "1",
        ],
    }  # fmt: skip


def timed(command: list[str], threads: str) -> float:
    start = time.perf_counter()
    rosetta(*command, "--threads", threads)
    return time.perf_counter() - start


def measure(
    named: dict[str, list[str]], settings: list[str], busy: int, repeats: int
) -> dict[tuple[str, str], list[float]]:
    """Wall seconds of every command under every setting, interleaved."""
    times: dict[tuple[str, str], list[float]] = {}
    with competing_load(busy):
        time.sleep(1.0 if busy else 0.0)  # the competing processes spinning
        for _ in range(repeats):
            for name, command in named.items():
                for threads in settings:
                    seconds = timed(command, threads)
                    times.setdefault((name, threads), []).append(seconds)
                    print(f"  busy {busy}  {name:18} --threads {threads:4}  "
                          f"{seconds:6.1f} s", flush=True)  # fmt: skip
    return times


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f}–{max(values):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=2, help="competing processes")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--updates", type=int, default=400)
    parser.add_argument("--translation-run", type=Path)
    parser.add_argument("--lm-run", type=Path)
    parser.add_argument("--runs", type=Path, default=ROOT / "runs", help="where "
                        "the models trained here are kept")  # fmt: skip
    parser.add_argument("--only", nargs="+", help="these commands only")
    args = parser.parse_args()
    translation = args.translation_run or train(
        TRANSLATION_CONFIG, args.runs / "busy-bench-de-en", args.updates
    )
    lm = args.lm_run or train(LM_CONFIG, args.runs / "busy-bench-lm", args.updates)
    settings = ["auto", str(cores())]
    with tempfile.TemporaryDirectory() as folder:
        named = commands(translation, lm, Path(folder))
        if args.only:
            named = {name: named[name] for name in args.only}
        idle = measure(named, settings, 0, args.repeats)
        busy = measure(named, settings, args.busy, args.repeats)
    print(f"\n{cores()} cores; busy = {args.busy} CPU-bound processes beside; "
          f"median seconds (range) of {args.repeats}")  # fmt: skip
    print("| command | --threads | idle (s) | busy (s) | busy ÷ idle |")
    print("|---|---|---|---|---|")
    for name in named:
        for threads in settings:
            quiet, loaded = idle[name, threads], busy[name, threads]
            ratio = statistics.median(loaded) / statistics.median(quiet)
            label = "auto (default)" if threads == "auto" else threads
            print(f"| {name} | {label} | {spread(quiet)} | {spread(loaded)} | "
                  f"{ratio:.2f}× |")  # fmt: skip


if __name__ == "__main__":
    main()
