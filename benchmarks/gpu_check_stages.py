"""The stages of ``benchmarks/gpu_check.py``: their commands, time limits and
how each one's result is summed up in a line."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from harness import ROOT

ROSETTA = [sys.executable, "-m", "rosetta.cli"]
PYTEST = [
    sys.executable,
    "-m",
    "pytest",
    "-q",
    "-p",
    "no:cacheprovider",
    "--continue-on-collection-errors",
]
# nanoGPT's character model on tiny Shakespeare: best validation loss 1.4697
# after 5,000 updates of 64 streams × 256 characters
NANOGPT_LOSS, NANOGPT_TOKENS = 1.4697, 5000 * 64 * 256
# the files whose device cases (``-k cuda``) a GPU check runs
DEVICE_TESTS = [
    "tests/test_gpu.py",
    "tests/test_devices.py",
    "tests/test_precision.py",
    "tests/test_dropout.py",
    "tests/test_validation.py",
    "tests/test_search_models.py",
    "tests/test_packed.py",
    "tests/test_serve.py",
]


@dataclass(frozen=True)
class Sizes:
    """How much each stage does: a GPU's sizes, or the dry run's tiny ones."""

    shapes: tuple[str, ...]  # SHAPE:BATCH_TOKENS of the training speed
    speed_steps: int
    speed_warmup: int
    teacher: tuple[str, ...]  # how long the teacher trains (config overrides)
    sentences: int  # decoded at batch 32 and 128, and scored by the NAT stage
    batch_1_sentences: int
    lm_config: str
    lm: tuple[str, ...]
    nat: tuple[str, ...]
    seconds: dict[str, float] = field(default_factory=dict)

    def changed(self, settings: list[str]) -> Sizes:
        """``--set name=value``: a number, or a comma-separated list."""
        kinds = {f.name: f.type for f in fields(self)}
        values = {}
        for setting in settings:
            name, _, value = setting.partition("=")
            if name not in kinds or name == "seconds":
                raise SystemExit(f"--set {setting}: sizes are {', '.join(kinds)}")
            if "tuple" in str(kinds[name]):
                values[name] = tuple(v for v in value.split(",") if v)
            elif name in ("lm_config",):
                values[name] = value
            else:
                values[name] = int(value)
        return replace(self, **values)


SIZES = {
    "cuda": Sizes(
        shapes=("bundled:2500", "base:25000"),
        speed_steps=20,
        speed_warmup=5,
        teacher=("train.max_minutes=0.7", "train.validate_every=500"),
        sentences=1000,
        batch_1_sentences=30,
        lm_config="configs/tinyshakespeare-char-xl.yaml",
        lm=("train.max_minutes=1.2", "train.validate_every=200"),
        nat=("train.max_minutes=0.5", "train.validate_every=500"),
        seconds=dict(tests=100, train=90, teacher=85, decode=80, lm=90, nat=75),
    ),
    "cpu": Sizes(
        shapes=("bundled:400", "base:300"),
        speed_steps=2,
        speed_warmup=1,
        teacher=("train.max_steps=30", "train.validate_every=30"),
        sentences=24,
        batch_1_sentences=3,
        lm_config="configs/tinyshakespeare-char-xl-cpu.yaml",
        lm=("train.max_steps=6", "train.validate_every=3", "train.batch_tokens=512"),
        nat=("train.max_steps=10", "train.validate_every=10"),
        # far above what an idle 2-core machine takes (8, 25, 40, 12, 15 and
        # 60 s): a busy CI machine must not fail the dry run by the clock
        seconds=dict(tests=240, train=240, teacher=300, decode=240, lm=180, nat=360),
    ),
}


@dataclass
class Stage:
    name: str
    commands: list[list[str]]
    seconds: float  # its limit
    least_seconds: float  # not started with less left
    summarise: Callable[[], dict] | None = None


def settings(*overrides: str) -> list[str]:
    return [flag for o in overrides for flag in ("--set", o)]


def valid_curve(run: Path) -> dict:
    """The language model's validation losses against tokens seen (updates
    times the run's own ``train.batch_tokens``)."""
    from rosetta.runs.checkpoint import read_index, read_meta

    meta = read_meta(run / read_index(run)["latest"])
    batch_tokens = meta["config"]["train"]["batch_tokens"]
    records = [
        json.loads(line)
        for line in (run / "metrics.jsonl").read_text().splitlines()
        if line.strip()
    ]
    curve = [
        {"step": r["step"], "tokens": r["step"] * batch_tokens, "loss": r["loss"]}
        for r in records
        if r.get("kind") == "valid"
    ]
    if not curve:
        raise ValueError("no validation in metrics.jsonl")
    best = min(curve, key=lambda point: point["loss"])
    rows = ["| update | tokens seen | validation loss |", "|---|---|---|"]
    rows += [f"| {p['step']} | {p['tokens']:,} | {p['loss']:.4f} |" for p in curve]
    rows.append(f"| nanoGPT | {NANOGPT_TOKENS:,} | {NANOGPT_LOSS} |")
    share = curve[-1]["tokens"] / NANOGPT_TOKENS
    return {
        "curve": curve,
        "tables": "\n".join(rows),
        "headline": f"valid loss {best['loss']:.4f} at {best['tokens'] / 1e6:.1f}M "
        f"tokens ({share:.0%} of nanoGPT's {NANOGPT_TOKENS / 1e6:.1f}M, "
        f"its {NANOGPT_LOSS})",
    }


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())


def speed_headline(path: Path) -> dict:
    rows = read_json(path)["rows"]
    parts = [
        f"{row['shape']} {row['precision']}"
        + (f" {row['vs_hf']:.2f}× HF" if "vs_hf" in row else "")
        + f", MFU {row['mfu']:.0%}"
        for row in rows
        if row["engine"] == "rosetta"
    ]
    return {"rows": rows, "headline": "; ".join(parts)}


def decode_headline(path: Path) -> dict:
    rows = read_json(path)
    parts = []
    for row in rows:
        if row["engine"] == "rosetta":
            continue
        ours = next(
            r
            for r in rows
            if r["engine"] == "rosetta"
            and (r["batch"], r["beam"]) == (row["batch"], row["beam"])
        )
        ratio = ours["sentences_per_s"] / row["sentences_per_s"]
        parts.append(f"b{row['batch']}/k{row['beam']} {ratio:.2f}× {row['engine']}")
    return {"rows": rows, "headline": "; ".join(parts)}


def nat_headline(path: Path) -> dict:
    results = read_json(path)["results"]
    ctc = results.get("CTC NAT", {})
    return {
        "results": results,
        "headline": f"CTC NAT batch-1 {ctc.get('latency_speedup')}× the teacher's "
        f"greedy latency, BLEU {ctc.get('sacrebleu')} against "
        f"{results['teacher greedy']['sacrebleu']} (trained here, minutes)",
    }


def tests_headline(path: Path) -> dict:
    import xml.etree.ElementTree as ElementTree

    suite = ElementTree.parse(path).getroot()
    suite = suite if suite.tag == "testsuite" else suite[0]
    counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors")}
    skipped = int(suite.get("skipped", 0))
    failed = [
        f"{case.get('classname')}.{case.get('name')}"
        for case in suite.iter("testcase")
        if case.find("failure") is not None or case.find("error") is not None
    ]
    passed = counts["tests"] - counts["failures"] - counts["errors"] - skipped
    return {
        "counts": counts | {"skipped": skipped, "passed": passed},
        "failed": failed,
        "headline": f"{passed} passed, {len(failed)} failed, {skipped} skipped",
    }


def stages_for(
    device: str, sizes: Sizes, work: Path, only: list[str] | None
) -> list[Stage]:
    bench = ROOT / "benchmarks"
    teacher, lm, nat = work / "teacher", work / "lm", work / "nat"
    on = f"train.device={device}"
    tests = DEVICE_TESTS if device == "cuda" else DEVICE_TESTS[:1]
    pick = ["-k", "cuda"] if device == "cuda" else []
    env_note = ["env", "ROSETTA_REQUIRE_CUDA=1"] if device == "cuda" else []
    xml = work / "tests.xml"
    gold = ROOT / "data/multi30k/train.en.gz"
    s = sizes.seconds
    stages = [
        Stage(
            "tests",
            [[*env_note, *PYTEST, *tests, *pick, f"--junitxml={xml}"]],
            s["tests"],
            30,
            lambda: tests_headline(xml),
        ),
        Stage(
            "train",
            [
                [
                    sys.executable,
                    str(bench / "gpu_speed.py"),
                    "--device",
                    device,
                    "--shapes",
                    *sizes.shapes,
                    "--steps",
                    str(sizes.speed_steps),
                    "--warmup",
                    str(sizes.speed_warmup),
                    "--json",
                    str(work / "train.json"),
                ]
            ],
            s["train"],
            30,
            lambda: speed_headline(work / "train.json"),
        ),
        Stage(
            "teacher",
            [
                [
                    *ROSETTA,
                    "train",
                    "configs/multi30k-de-en-transformer.yaml",
                    "-o",
                    str(teacher),
                    *settings(on, *sizes.teacher),
                ]
            ],
            s["teacher"],
            30,
        ),
        Stage(
            "decode",
            [
                [
                    sys.executable,
                    str(bench / "decode_speed.py"),
                    "--device",
                    device,
                    "--run-dir",
                    str(teacher),
                    "--threads",
                    "1",
                    "--repeats",
                    "1",
                    "--batch-sizes",
                    "1",
                    "32",
                    "128",
                    "--beams",
                    "1",
                    "5",
                    "--sentences",
                    str(sizes.sentences),
                    "--batch-1-sentences",
                    str(sizes.batch_1_sentences),
                    "--json",
                    str(work / "decode.json"),
                ]
            ],
            s["decode"],
            30,
            lambda: decode_headline(work / "decode.json"),
        ),
        Stage(
            "lm",
            [
                [
                    *ROSETTA,
                    "train",
                    sizes.lm_config,
                    "-o",
                    str(lm),
                    *settings(on, *sizes.lm),
                ]
            ],
            s["lm"],
            30,
            lambda: valid_curve(lm),
        ),
        Stage(
            "nat",
            [
                [
                    *ROSETTA,
                    "train",
                    "configs/multi30k-de-en-nat-ctc.yaml",
                    "-o",
                    str(nat),
                    *settings(on, f"data.train.tgt={gold}", *sizes.nat),
                ],
                [
                    sys.executable,
                    str(bench / "nat_multi30k.py"),
                    "--teacher",
                    str(teacher),
                    "--ctc",
                    str(nat),
                    "--device",
                    device,
                    "--npd",
                    "--sentences",
                    str(min(sizes.sentences, 300)),
                    "--latency-sentences",
                    str(sizes.batch_1_sentences * 2),
                    "--flops-sentences",
                    "2",
                    "--rounds",
                    "1",
                    "--json",
                    str(work / "nat.json"),
                    "--plot",
                    str(work / "nat.png"),
                ],
            ],
            s["nat"],
            30,
            lambda: nat_headline(work / "nat.json"),
        ),
    ]
    return [stage for stage in stages if only is None or stage.name in only]
