"""Each stage of ``benchmarks/gpu_check.py`` summed up in a line, computed in a
process of the stage's own: its interpreter and its ``PYTHONPATH`` (the carried
packages, ``src/``), which the check's parent process does not have. Prints
the summary as one JSON object.

    python benchmarks/gpu_check_summaries.py lm /tmp/rosetta-gpu-check-x/lm
"""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from pathlib import Path

# nanoGPT's character model on tiny Shakespeare: best validation loss 1.4697
# after 5,000 updates of 64 streams × 256 characters
NANOGPT_LOSS, NANOGPT_TOKENS = 1.4697, 5000 * 64 * 256


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())


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


def speed_headline(path: Path) -> dict:
    rows = read_json(path)["rows"]
    parts = [
        f"{row['shape']} {row['precision']}"
        + (" compiled" if row["engine"] == "rosetta-compiled" else "")
        + (f" {row['vs_hf']:.2f}× HF" if "vs_hf" in row else "")
        + f", MFU {row['mfu']:.0%}"
        for row in rows
        if row["engine"] in ("rosetta", "rosetta-compiled")
    ]
    return {"rows": rows, "headline": "; ".join(parts)}


OURS = {"rosetta": "eager", "rosetta-compiled": "compiled"}


def decode_headline(path: Path) -> dict:
    """Per batch size and beam, each peer's speed against Rosetta's, eager
    and compiled: "b32/k5 ÷ hf: eager 1.20×, compiled 3.05×"."""
    rows = read_json(path)
    parts = []
    for peer in rows:
        if peer["engine"] in OURS:
            continue
        ratios = [
            f"{label} {ours['sentences_per_s'] / peer['sentences_per_s']:.2f}×"
            for engine, label in OURS.items()
            for ours in rows
            if ours["engine"] == engine
            and (ours["batch"], ours["beam"]) == (peer["batch"], peer["beam"])
        ]
        parts.append(
            f"b{peer['batch']}/k{peer['beam']} ÷ {peer['engine']}: {', '.join(ratios)}"
        )
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


SUMMARIES: dict[str, Callable[[Path], dict]] = {
    "tests": tests_headline,
    "train": speed_headline,
    "decode": decode_headline,
    "lm": valid_curve,
    "nat": nat_headline,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=sorted(SUMMARIES))
    parser.add_argument("path", type=Path, help="what the stage wrote")
    args = parser.parse_args()
    print(json.dumps(SUMMARIES[args.stage](args.path)))


if __name__ == "__main__":
    main()
