"""Non-autoregressive translation against autoregressive baselines: quality
and speed on Multi30k test_2016 (or any parallel test set), in one run.

Systems: the teacher with greedy and beam search; with ``--shallow``, an
autoregressive model with a deep encoder and a one-layer decoder trained on
the same distilled corpus (greedy and beam), the baseline that decodes
nearly as fast as a one-pass model; with ``--nat``, the fertility NAT with
argmax fertilities and with noisy parallel decoding (NPD) at each ``--npd``
sample count, rescored by the teacher; with ``--uniform``, a fertility NAT
whose decoder input spreads the source evenly over the target; with
``--ctc``, a NAT with the CTC length model (one pass). For each: chrF and
BLEU (sacreBLEU, and the
tokenized lower-cased BLEU that published Multi30k results use); latency per
sentence at batch 1 (every sentence decoded by every system in turn, so
that the machine's noise falls on all of them alike; median and 90th
percentile); and sentences per second at batch 32 (whole test set, rounds
interleaved, median). Ratios are against the teacher's greedy search.

Also counts the arithmetic each system does per sentence (matrix products
and attention, as ``torch.utils.flop_counter`` counts them) and measures the
device's best matrix-product rate in the same run: a sentence's operations
divided by that rate is the least time any implementation of that model
could take on this device, so the table shows the largest latency ratio
against greedy search this model can reach here.

Also plots decoding time at batch 1 against output length for the teacher
and the argmax NAT: the autoregressive decoder's cost grows with every token
it produces, the NAT's barely.

    python benchmarks/nat_multi30k.py --teacher runs/multi30k-de-en-transformer \
        --nat runs/multi30k-de-en-nat --ctc runs/multi30k-de-en-nat-ctc \
        --shallow runs/multi30k-de-en-transformer-deep-shallow
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

from harness import synchronize
from rosetta import Translator
from rosetta.data.corpus import read_parallel
from rosetta.evaluate import chrf_score, sacrebleu_score, tokenized_lowercase_bleu
from rosetta.families.nat.translator import NATTranslator
from rosetta.inference.text_translator import TextTranslator
from rosetta.jobs.loading import load_translator
from rosetta.search.options import SearchOptions
from train_speed import matmul_ceiling

GREEDY = SearchOptions()


def one_pass(translator: NATTranslator, samples: int = 0):
    """translate(sentences, batch_size) of a NAT with ``samples`` NPD draws."""

    def run(sentences, size):
        translator.npd = samples
        return translator.translate(sentences, batch_size=size)

    return run


def systems(
    teacher: Translator,
    beam: int,
    shallow: TextTranslator | None = None,
    nat: NATTranslator | None = None,
    npd: tuple[int, ...] = (),
    ctc: NATTranslator | None = None,
    uniform: NATTranslator | None = None,
):
    """(name, translate(sentences, batch_size) -> outputs) of every system."""

    def autoregressive(translator, options):
        return lambda sentences, size: translator.translate(
            sentences, options, batch_size=size, workers=1
        )

    searches = [("greedy", GREEDY), (f"beam {beam}", SearchOptions(beam_size=beam))]
    rows = [(f"teacher {name}", autoregressive(teacher, o)) for name, o in searches]
    if shallow is not None:
        rows += [
            (f"deep-shallow {name}", autoregressive(shallow, o)) for name, o in searches
        ]
    if nat is not None:
        rows.append(("NAT argmax", one_pass(nat)))
        rows += [(f"NAT + NPD s={s}", one_pass(nat, s)) for s in npd]
    if uniform is not None:
        rows.append(("NAT uniform copy, argmax", one_pass(uniform)))
    if ctc is not None:
        rows.append(("CTC NAT", one_pass(ctc)))
    return rows


def flops_per_sentence(run, sentences: list[str]) -> float:
    """Median floating-point operations to translate one sentence at batch 1."""
    counts = []
    for sentence in sentences:
        with FlopCounterMode(display=False) as counter:
            run([sentence], 1)
        counts.append(counter.get_total_flops())
    return statistics.median(counts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teacher", required=True, help="autoregressive run folder")
    parser.add_argument("--nat", help="fertility NAT run folder")
    parser.add_argument("--ctc", help="CTC NAT run folder")
    parser.add_argument(
        "--uniform", help="fertility NAT run folder with decoder_input: uniform"
    )
    parser.add_argument(
        "--shallow", help="deep-encoder, one-layer-decoder autoregressive run folder"
    )
    parser.add_argument("--src", default="data/multi30k/test_2016_flickr.de.gz")
    parser.add_argument("--ref", default="data/multi30k/test_2016_flickr.en.gz")
    parser.add_argument("--npd", type=int, nargs="*", default=[10, 100])
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument(
        "--latency-sentences",
        type=int,
        default=200,
        help="sentences timed one at a time (the first ones of the test set)",
    )
    parser.add_argument(
        "--flops-sentences",
        type=int,
        default=50,
        help="sentences whose operations are counted (the first timed ones)",
    )
    parser.add_argument(
        "--sentences", type=int, default=None, help="the first N of the test set"
    )
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3, help="whole-set repeats")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", default="benchmarks/results/nat_multi30k.json")
    parser.add_argument("--plot", default="docs/images/nat-latency-by-length.png")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)

    pairs = read_parallel(Path(args.src), Path(args.ref))[: args.sentences]
    sources = [s for s, _ in pairs]
    references = [t for _, t in pairs]
    teacher = load_translator(args.teacher, device=device)
    one_pass_runs = {}
    for flag in ("nat", "ctc", "uniform"):
        folder = getattr(args, flag)
        if folder is not None:
            loaded = load_translator(folder, device=device)
            assert isinstance(loaded, NATTranslator), f"{folder} is not a NAT run"
            loaded.teacher = teacher
            one_pass_runs[flag] = loaded
    shallow = None
    if args.shallow is not None:
        shallow = load_translator(args.shallow, device=device)
    rows = systems(
        teacher,
        args.beam,
        shallow,
        one_pass_runs.get("nat"),
        tuple(args.npd),
        one_pass_runs.get("ctc"),
        one_pass_runs.get("uniform"),
    )

    results: dict[str, dict] = {name: {} for name, _ in rows}
    print(f"quality: {len(sources)} sentences", flush=True)
    for name, run in rows:
        outputs = run(sources, args.batch)
        results[name]["sacrebleu"] = round(
            sacrebleu_score(outputs, references).value, 2
        )
        results[name]["bleu_tok_lc"] = round(
            tokenized_lowercase_bleu(outputs, references).value, 2
        )
        results[name]["chrf"] = round(chrf_score(outputs, references).value, 2)
        results[name]["mean_length"] = round(
            statistics.mean(len(o.split()) for o in outputs), 2
        )

    print(f"latency: {args.latency_sentences} sentences at batch 1", flush=True)
    timed = sources[: args.latency_sentences]
    for _, run in rows:  # warm-up
        run(timed[:3], 1)
    latencies: dict[str, list[float]] = {name: [] for name, _ in rows}
    lengths: dict[str, list[int]] = {name: [] for name, _ in rows}
    for sentence in timed:
        for name, run in rows:
            synchronize(device)
            started = time.perf_counter()
            output = run([sentence], 1)
            synchronize(device)
            latencies[name].append(time.perf_counter() - started)
            lengths[name].append(len(output[0].split()))

    print(f"throughput: batch {args.batch}, {args.rounds} rounds", flush=True)
    speeds: dict[str, list[float]] = {name: [] for name, _ in rows}
    for _ in range(args.rounds):
        for name, run in rows:
            synchronize(device)
            started = time.perf_counter()
            run(sources, args.batch)
            synchronize(device)
            speeds[name].append(len(sources) / (time.perf_counter() - started))

    print(f"arithmetic: {args.flops_sentences} sentences at batch 1", flush=True)
    for name, run in rows:
        results[name]["mflop_per_sentence"] = round(
            flops_per_sentence(run, timed[: args.flops_sentences]) / 1e6, 1
        )
    ceiling = matmul_ceiling(device, "fp32")

    base = "teacher greedy"
    base_latency = statistics.median(latencies[base])
    base_speed = statistics.median(speeds[base])
    for name, _ in rows:
        times = sorted(latencies[name])
        results[name].update(
            latency_ms_median=round(1000 * statistics.median(times), 2),
            latency_ms_p90=round(1000 * times[int(0.9 * (len(times) - 1))], 2),
            latency_speedup=round(base_latency / statistics.median(times), 2),
            sentences_per_s=round(statistics.median(speeds[name]), 1),
            sentences_per_s_spread=[
                round(min(speeds[name]), 1),
                round(max(speeds[name]), 1),
            ],
            throughput_speedup=round(statistics.median(speeds[name]) / base_speed, 2),
        )
        flops = results[name]["mflop_per_sentence"] * 1e6
        floor = flops / (ceiling * 1e9)
        results[name].update(
            gflops_at_batch_1=round(flops / statistics.median(times) / 1e9, 1),
            floor_ms=round(1000 * floor, 2),
            best_possible_speedup=round(base_latency / floor, 1),
        )

    threads = torch.get_num_threads()
    print(f"\n{device.type}, {threads} threads; ratios against {base}\n")
    print(
        "| system | sacreBLEU | BLEU (tok, lc) | chrF | batch-1 ms (median / p90) "
        f"| × | batch-{args.batch} sent/s | × |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, _ in rows:
        r = results[name]
        print(
            f"| {name} | {r['sacrebleu']:.2f} | {r['bleu_tok_lc']:.2f} "
            f"| {r['chrf']:.2f} "
            f"| {r['latency_ms_median']:.1f} / {r['latency_ms_p90']:.1f} "
            f"| {r['latency_speedup']:.2f} | {r['sentences_per_s']:.0f} "
            f"| {r['throughput_speedup']:.2f} |"
        )
    print(
        f"\narithmetic at batch 1; the device's best fp32 matrix-product rate: "
        f"{ceiling:.0f} GFLOP/s\n"
    )
    print(
        "| system | MFLOP per sentence | GFLOP/s at batch 1 "
        f"| ms at {ceiling:.0f} GFLOP/s | best possible × |"
    )
    print("|---|---|---|---|---|")
    for name, _ in rows:
        r = results[name]
        print(
            f"| {name} | {r['mflop_per_sentence']:.0f} | {r['gflops_at_batch_1']:.1f} "
            f"| {r['floor_ms']:.1f} | {r['best_possible_speedup']:.1f} |"
        )
    settings = {k: v for k, v in vars(args).items()}
    settings.update(
        device_type=device.type, torch_threads=threads, matmul_gflops=round(ceiling)
    )
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(
        json.dumps({"settings": settings, "results": results}, indent=1) + "\n"
    )
    shown = [base] + [n for n in ("NAT argmax", "CTC NAT") if n in latencies]
    plot(latencies, lengths, shown, Path(args.plot))


def plot(
    latencies: dict[str, list[float]],
    lengths: dict[str, list[int]],
    names: list[str],
    path: Path,
) -> None:
    """Batch-1 decoding time against output length (words), one colour per
    system: each sentence a dot, the median per length a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(5.5, 3.6), layout="constrained")
    for name in names:
        points = list(zip(lengths[name], latencies[name], strict=True))
        dots = axis.scatter(
            [n for n, _ in points], [1000 * t for _, t in points], s=6, alpha=0.35
        )
        by_length: dict[int, list[float]] = {}
        for n, t in points:
            by_length.setdefault(n, []).append(1000 * t)
        xs = sorted(by_length)
        axis.plot(
            xs,
            [statistics.median(by_length[x]) for x in xs],
            color=dots.get_facecolor()[0][:3],
            label=name,
        )
    axis.set_xlabel("output length (words)")
    axis.set_ylabel("decoding time at batch 1 (ms)")
    axis.set_ylim(bottom=0)
    axis.legend()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    print(f"plot: {path}")


if __name__ == "__main__":
    main()
