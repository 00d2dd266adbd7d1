"""Load on ``rosetta serve``: concurrent clients, batching on and off, or workers.

The server runs as its own process on loopback (``rosetta serve``), as users
run it. N clients (asyncio + httpx, in this process) each send one request at a
time, back to back, for a fixed time; a request carries Multi30k test_2016
sentences (German), taken in turn. The table gives requests/s, sentences/s,
p50/p99 latency, errors (must be 0), and the server's own count of model calls
(how many sentences each call carried on average). Modes are interleaved
(batching on, off, on, off, ...) and the medians compared. ``--compare
workers`` compares one worker with ``--workers N`` (batching on in both) on
``--threads`` threads.

    python benchmarks/serve_load.py --run-dir runs/quality-de-en
    python benchmarks/serve_load.py --compare workers --threads 2 --workers 2
    python benchmarks/serve_load.py --compare engines   # Rosetta's and CTranslate2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

from quality_multi30k import cpu_name
from rosetta.data.corpus import read_lines

TEST_SOURCE = Path(__file__).parent.parent / "data/multi30k/test_2016_flickr.de.gz"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(run_dir: str, threads: int, flags: list[str]):
    port = free_port()
    command = [
        *(sys.executable, "-m", "rosetta.cli", "serve", "-m", run_dir),
        *("--port", str(port), "--threads", str(threads), "--log-level", "warning"),
        *flags,
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    address = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{address}/health", timeout=1).status_code == 200:
                return process, address
        except httpx.TransportError:
            if process.poll() is not None:
                raise SystemExit(f"the server exited: {' '.join(command)}") from None
            time.sleep(0.3)
    process.kill()
    raise SystemExit("the server did not start within 120 s")


async def load(
    address: str,
    sentences: list[str],
    clients: int,
    seconds: float,
    per_request: int,
    search: dict,
) -> dict:
    latencies: list[float] = []
    errors: list[str] = []
    done_sentences = 0
    stop_at = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client(number: int, http: httpx.AsyncClient) -> None:
        nonlocal done_sentences
        position = number * 37 % len(sentences)
        while time.perf_counter() < stop_at:
            batch = [
                sentences[(position + i) % len(sentences)] for i in range(per_request)
            ]
            position = (position + per_request) % len(sentences)
            began = time.perf_counter()
            try:
                response = await http.post(
                    f"{address}/translate", json={"sentences": batch, **search}
                )
                if response.status_code != 200:
                    errors.append(f"{response.status_code}: {response.text[:200]}")
                    continue
            except httpx.HTTPError as error:
                errors.append(repr(error))
                continue
            latencies.append(time.perf_counter() - began)
            done_sentences += per_request

    began = time.perf_counter()
    async with httpx.AsyncClient(timeout=120, limits=limits) as http:
        await asyncio.gather(*(client(i, http) for i in range(clients)))
    elapsed = time.perf_counter() - began
    latencies.sort()

    def percentile(p: float) -> float:
        if not latencies:
            return float("nan")
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000

    return {
        "requests_per_s": len(latencies) / elapsed,
        "sentences_per_s": done_sentences / elapsed,
        "p50_ms": percentile(0.50),
        "p99_ms": percentile(0.99),
        "errors": len(errors),
        "first_errors": errors[:3],
    }


def measure(args, sentences, flags: list[str]) -> dict:
    process, address = start_server(args.run_dir, args.threads, flags + args.serve)
    try:
        search = {"beam_size": args.beam}
        if args.compare == "engines" and args.beam > 1:  # the beam both engines run
            search |= {"refill": True, "stopping": "k_finished"}
        warm = asyncio.run(load(address, sentences, 2, 2.0, args.per_request, search))
        if warm["errors"]:
            raise SystemExit(f"warm-up failed: {warm['first_errors']}")
        before = httpx.get(f"{address}/info").json()["batching"]
        result = asyncio.run(
            load(
                address, sentences, args.clients, args.seconds, args.per_request, search
            )
        )
        after = httpx.get(f"{address}/info").json()["batching"]
        calls = after["model_calls"] - before["model_calls"]
        result["sentences_per_call"] = (after["sentences"] - before["sentences"]) / max(
            calls, 1
        )
        return result
    finally:
        process.terminate()
        process.wait(60)


def spread(values: list[float]) -> str:
    return f"{min(values):.1f}–{max(values):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", default="runs/quality-de-en")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--per-request", type=int, default=1, help="sentences")
    parser.add_argument("--beam", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1, help="server CPU threads")
    parser.add_argument(
        "--compare", choices=["batching", "workers", "engines"], default="batching"
    )
    parser.add_argument("--workers", type=int, default=2, help="with --compare workers")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--serve", nargs="*", default=[], help="more `rosetta serve` flags"
    )
    parser.add_argument("--json", type=Path, default=None, help="write results here")
    args = parser.parse_args()
    sentences = [line for _, line in read_lines(TEST_SOURCE)]
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))

    modes = {"on": [], "off": ["--no-batching"]}
    if args.compare == "workers":
        modes = {
            "1": ["--workers", "1"],
            str(args.workers): ["--workers", str(args.workers)],
        }
    if args.compare == "engines":  # the refilling beam: the one both have
        modes = {
            "rosetta": ["--engine", "rosetta"],
            "ctranslate2": ["--engine", "ctranslate2"],
        }

    runs: dict[str, list[dict]] = {mode: [] for mode in modes}
    for repeat in range(args.repeats):
        for mode, flags in modes.items():
            result = measure(args, sentences, flags)
            runs[mode].append(result)
            print(
                f"repeat {repeat + 1}, {args.compare} {mode}: "
                f"{result['sentences_per_s']:.1f} sent/s, "
                f"p50 {result['p50_ms']:.0f} ms, errors {result['errors']}",
                file=sys.stderr,
                flush=True,
            )

    def median(mode: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[mode])

    print(
        f"\n{cpu_name()}, server threads {args.threads}, {args.clients} clients, "
        f"{args.per_request} sentence(s) per request, beam {args.beam}, "
        f"{args.seconds:.0f} s per run, median of {args.repeats} (spread)\n"
    )
    print(
        f"| {args.compare} | requests/s | sentences/s | p50 ms | p99 ms | "
        "sentences per model call | errors |"
    )
    print("|---|---|---|---|---|---|---|")
    for mode in modes:
        rates = [r["sentences_per_s"] for r in runs[mode]]
        print(
            f"| {mode} | {median(mode, 'requests_per_s'):.1f} "
            f"| {median(mode, 'sentences_per_s'):.1f} ({spread(rates)}) "
            f"| {median(mode, 'p50_ms'):.0f} | {median(mode, 'p99_ms'):.0f} "
            f"| {median(mode, 'sentences_per_call'):.1f} "
            f"| {sum(r['errors'] for r in runs[mode])} |"
        )
    baseline, candidate = ("off", "on")
    if args.compare == "workers":
        baseline, candidate = ("1", str(args.workers))
    if args.compare == "engines":
        baseline, candidate = ("rosetta", "ctranslate2")
    ratio = median(candidate, "sentences_per_s") / median(baseline, "sentences_per_s")
    print(f"\nthroughput, {args.compare} {candidate} ÷ {baseline}: {ratio:.2f}×")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "settings": vars(args) | {"json": str(args.json)},
                    "runs": runs,
                    "ratio": ratio,
                },
                indent=2,
            )
        )
    if any(r["errors"] for mode in runs for r in runs[mode]):
        raise SystemExit("errors under load")


if __name__ == "__main__":
    main()
