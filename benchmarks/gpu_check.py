"""Every GPU claim checked in one command, on a machine with PyTorch and CUDA
but no network (``make gpu-check``; ``DEVICE=cpu`` is the dry run CI makes).

What Rosetta needs and that machine lacks comes as wheels (and source
archives) prepared beforehand by ``make gpu-wheels`` in ``.gpu-wheels/``; they
are installed into a temporary folder put first on ``PYTHONPATH``, and
Rosetta runs from the working tree (``src/``). Then, each stage a process of
its own with a time limit, so that one failing or slow stage leaves the others
their minutes:

1. ``tests``: the device cases (``-k cuda``, ``ROSETTA_REQUIRE_CUDA=1``):
   every family trains, saves, loads and decodes on the GPU; bf16 and fp16;
   resume; a process group on NCCL; the GPU cases of the other test files.
2. ``train``: training throughput against Hugging Face Marian of the same
   shape (``benchmarks/gpu_speed.py``): the bundled shape and Transformer-base,
   fp32 and bf16, tokens/s and model FLOPs utilisation.
3. ``teacher``: the bundled Transformer trained for a fixed time (the model
   the next two stages decode with; trained here, not carried).
4. ``decode``: decoding speed at batch 1, 32 and 128, greedy and beam 5,
   against ``generate()`` and CTranslate2 (``benchmarks/decode_speed.py``;
   CTranslate2 sits out where its wheel is not carried or has no CUDA).
5. ``lm``: the Transformer-XL character model on tiny Shakespeare for a fixed
   time: its validation curve against tokens seen, beside nanoGPT's published
   1.4697 after 5,000 updates of 64 × 256 characters (81.9M).
6. ``nat``: a one-pass (CTC) NAT trained for a fixed time on the original
   targets, against the teacher at batch 1 (``benchmarks/nat_multi30k.py``).

Writes ``gpu-check.md`` (one table of stages, then each stage's table),
``gpu-check.json`` and ``gpu-check.log`` (every stage's output) into ``--out``,
after every stage, so a check cut short keeps what it measured.

This process imports nothing but the standard library: on the GPU machine
neither Rosetta nor the carried packages are importable here. Whatever needs
them, each stage's summary included, runs in a process of the stage's own,
started by ``--python`` (the stages' interpreter, by default this one) with
the carried packages, ``src/`` and the repository on ``PYTHONPATH``. The dry
run starts this process the same way, without site-packages (``-E -S``), and
the stages with the virtual environment's Python:

    python3 -E -S benchmarks/gpu_check.py --device cuda --out gpu-check
    python3 -E -S benchmarks/gpu_check.py --device cpu --out /tmp/dry-run \\
        --python .venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpu_check_stages import ROOT, SIZES, Stage, stages_for

# a summary reads what its stage wrote (the lm's imports Rosetta to do so)
SUMMARY_SECONDS = 60


def pip_install(python: str, files: list[Path], site: Path, log) -> bool:
    done = subprocess.run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-index",
            "--no-deps",
            "--no-build-isolation",
            "--no-cache-dir",
            "--target",
            str(site),
            *map(str, files),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    log(f"$ pip install {' '.join(f.name for f in files)}\n{done.stdout}{done.stderr}")
    return done.returncode == 0


def install(python: str, wheels: Path, site: Path, log) -> list[str]:
    """Wheels and then source archives in ``wheels`` into ``site``, by the
    stages' ``python``, without the network or build isolation (the machine's
    own setuptools and Cython build a source archive); the names installed. A
    source archive that does not build is logged and left out: the tests that
    need it say so."""
    found = sorted(wheels.glob("*.whl"))
    if found and not pip_install(python, found, site, log):
        raise SystemExit(f"installing the wheels of {wheels} failed: see the log")
    names = [path.name for path in found]
    for archive in sorted(wheels.glob("*.tar.gz")):
        if pip_install(python, [archive], site, log):
            names.append(archive.name)
        else:
            names.append(f"{archive.name} (did not build)")
    return names


def tables_in(text: str) -> str:
    """The Markdown table lines a stage printed (with the line before each)."""
    lines, kept = text.splitlines(), []
    for i, line in enumerate(lines):
        if line.startswith("|"):
            caption = lines[i - 1] if i else ""
            if caption and not caption.startswith(("|", "{")):
                kept.extend(["", caption])
            elif not caption.startswith("|"):
                kept.append("")
            kept.append(line)
    return "\n".join(kept).strip()


def run_logged(command: list[str], env: dict, seconds: float, log):
    """``command`` run in the repository, its output captured and logged."""
    log(f"$ {' '.join(command)}")
    done = subprocess.run(
        command,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=max(seconds, 1),
        check=False,
    )
    log(done.stdout + done.stderr)
    return done


def run_stage(stage: Stage, env: dict, seconds: float, log) -> dict:
    began, outputs = time.perf_counter(), []
    status = "passed"
    for command in stage.commands:
        left = seconds - (time.perf_counter() - began)
        try:
            done = run_logged(command, env, left, log)
        except subprocess.TimeoutExpired as stopped:
            text = (stopped.stdout or b"").decode(errors="replace")
            outputs.append(text)
            log(text + (stopped.stderr or b"").decode(errors="replace"))
            status = f"stopped at its {seconds:.0f} s"
            break
        outputs.append(done.stdout)
        if done.returncode != 0:
            status = f"failed (exit {done.returncode})"
            break
    record = {"status": status, "tables": tables_in("\n".join(outputs))}
    if stage.summary is not None:
        record.update(summarise(stage.summary, env, log))
        if status == "passed" and "summary_error" in record:
            status = record["status"] = "passed, its summary failed"
    record["seconds"] = round(time.perf_counter() - began, 1)
    return record


def summarise(command: list[str], env: dict, log) -> dict:
    """The summary that ``command`` prints as its last line (one JSON object),
    computed in the stage's environment, or ``summary_error``: e.g. a stage
    stopped before its checkpoint."""
    try:
        done = run_logged(command, env, SUMMARY_SECONDS, log)
    except subprocess.TimeoutExpired:
        return {"summary_error": f"no summary within {SUMMARY_SECONDS} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode == 0 and lines:
        try:
            summary = json.loads(lines[-1])
        except json.JSONDecodeError:
            summary = None
        if isinstance(summary, dict):
            return summary
    why = done.stderr.strip().splitlines() or [f"exit {done.returncode}, no JSON"]
    return {"summary_error": why[-1]}


def device_line(python: str, env: dict) -> dict:
    script = (
        "import json, torch; d = torch.cuda.is_available(); print(json.dumps({"
        "'torch': torch.__version__, 'cuda': torch.version.cuda, "
        "'gpu': torch.cuda.get_device_name(0) if d else None}))"
    )
    done = subprocess.run(
        [python, "-c", script], env=env, capture_output=True, text=True, check=False
    )
    return json.loads(done.stdout) if done.returncode == 0 else {"error": done.stderr}


def write_report(out: Path, report: dict) -> None:
    about = report["machine"]
    lines = [
        f"# GPU check on {about.get('gpu') or 'the CPU (dry run)'}",
        "",
        f"torch {about.get('torch')}, CUDA {about.get('cuda')}; device "
        f"{report['device']}; {report['seconds']:.0f} s in all; carried: "
        f"{', '.join(report['installed']) or 'nothing'}",
        "",
        "| stage | status | seconds | result |",
        "|---|---|---|---|",
    ]
    for name, record in report["stages"].items():
        lines.append(
            f"| {name} | {record['status']} | {record.get('seconds', '')} "
            f"| {record.get('headline') or record.get('summary_error', '')} |"
        )
    for name, record in report["stages"].items():
        if record.get("tables"):
            lines += ["", f"## {name}", "", record["tables"]]
    (out / "gpu-check.md").write_text("\n".join(lines) + "\n")
    (out / "gpu-check.json").write_text(json.dumps(report, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--out", type=Path, default=Path("gpu-check"))
    parser.add_argument("--wheels", type=Path, default=ROOT / ".gpu-wheels")
    parser.add_argument("--minutes", type=float, default=9.0, help="all stages")
    parser.add_argument("--stages", nargs="+", default=None, help="default: all")
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the stages' interpreter, with PyTorch (default: this one)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SIZE=VALUE",
        help="change one of the sizes (gpu_check_stages.Sizes), e.g. "
        "lm=train.max_minutes=3,train.validate_every=200",
    )
    args = parser.parse_args()
    found = shutil.which(args.python)
    if found is None:
        raise SystemExit(f"--python {args.python}: no such interpreter")
    python = os.path.abspath(found)  # the stages run in the repository root
    args.out.mkdir(parents=True, exist_ok=True)
    logfile = (args.out / "gpu-check.log").open("w")

    def log(text: str) -> None:
        logfile.write(text.rstrip("\n") + "\n")
        logfile.flush()

    work = Path(tempfile.mkdtemp(prefix="rosetta-gpu-check-"))
    try:
        report = check(args, python, work, log)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # runs, wheels installed: minutes' work
    print((args.out / "gpu-check.md").read_text())
    failed = [n for n, r in report["stages"].items() if r["status"] != "passed"]
    if failed:
        raise SystemExit(f"not passed: {', '.join(failed)}")


def check(args: argparse.Namespace, python: str, work: Path, log) -> dict:
    """The wheels installed into ``work``, then the stages, each one's record
    written out as it ends; the report."""
    began = time.perf_counter()
    sizes = SIZES[args.device].changed(args.set)
    # the wheels are for the GPU machine's Python; a dry run uses its own
    carried = args.device == "cuda" and args.wheels.is_dir()
    installed = install(python, args.wheels, work / "site", log) if carried else []
    paths = [str(work / "site"), str(ROOT / "src"), str(ROOT)]
    env = os.environ | {
        "PYTHONPATH": os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")]),
        "PYTHONUNBUFFERED": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    report = {
        "device": args.device,
        "machine": device_line(python, env),
        "installed": installed,
        "sizes": vars(sizes),
        "stages": {},
        "seconds": 0.0,
    }
    if args.device == "cuda" and not report["machine"].get("gpu"):
        raise SystemExit(f"--device cuda, but this PyTorch sees no GPU: {report}")
    budget = 60 * args.minutes
    for stage in stages_for(args.device, sizes, work, args.stages, python):
        left = budget - (time.perf_counter() - began)
        if left < stage.least_seconds:
            record = {"status": f"skipped: {left:.0f} s left"}
        else:
            record = run_stage(stage, env, min(stage.seconds, left), log)
        report["stages"][stage.name] = record
        report["seconds"] = time.perf_counter() - began
        write_report(args.out, report)
        print(f"{stage.name}: {record['status']} {record.get('headline', '')}")
    return report


if __name__ == "__main__":
    main()
