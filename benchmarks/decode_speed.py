"""Decoding speed: Rosetta against Hugging Face generate() and CTranslate2.

The trained Rosetta Transformer is copied weight for weight into a Hugging Face
``MarianMTModel`` and a CTranslate2 model (``benchmarks/peers.py``; the copy is
checked before timing). Every engine then decodes the same token ids of
Multi30k test_2016, sorted by length and cut into the same batches, with the
same search (greedy, or beam 5 with length penalty 0.75 that keeps 5 live
prefixes and ends a sentence once 5 of its candidates have ended) and the
same output limit ``1.5·S + 10``.
Tokenization is not timed.

With ``--compiled``, Rosetta also decodes with its compiled step
(``rosetta-compiled``: ``torch.compile``, on a GPU CUDA graphs), after one
untimed pass over the same batches that compiles and records every shape
they bring (its seconds are printed as ``warmup_s``: what a user's first
batches wait).

Runs are interleaved (Rosetta, HF, CT2, Rosetta, ...) and repeated; the table
gives the median sentences/s and generated tokens/s with the spread (min-max),
the BLEU of each engine's output, the share of its translations identical to
Rosetta's, and Rosetta's speed ratio to each peer. With ``--device cuda`` every
engine decodes on the GPU (CT2 where its build has CUDA) and the clocks are
read after ``torch.cuda.synchronize()``.

    python benchmarks/decode_speed.py --run-dir runs/quality-de-en
    python benchmarks/decode_speed.py --device cuda --batch-sizes 32 128
    python benchmarks/decode_speed.py --device cuda --compiled
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from harness import synchronize
from peers import check_copy, to_marian
from quality_multi30k import device_name
from rosetta.data.corpus import read_corpus
from rosetta.data.vocab import EOS, EOS_ID, PAD_ID
from rosetta.evaluate import sacrebleu_score
from rosetta.families.transformer.ctranslate2.export import import_ctranslate2
from rosetta.jobs.exports import export_model
from rosetta.jobs.loading import load_translator
from rosetta.jobs.run_config import load_config
from rosetta.runtime.precision import autocast, quantize_int8
from rosetta.runtime.precisions import PRECISIONS
from rosetta.search.batched import decode_in_batches
from rosetta.search.options import SearchOptions

ALPHA = 0.75
# One beam search in every engine: k live prefixes (Rosetta's refill=True), and
# a sentence ends once k candidates have ended: CT2's rule (patience 1), HF's
# early_stopping=True, Rosetta's stopping="k_finished".
SEARCH = {"alpha": ALPHA, "stopping": "k_finished", "refill": True}


ONE_SEARCH = "rosetta-one-search"  # with --workers: Rosetta without workers
COMPILED = "rosetta-compiled"  # with --compiled: the compiled decoding step


def threads_label(row: dict) -> str:
    """The threads column: 2 for one search on two threads, "2 = 2 × 1" for
    two one-thread workers (HF has no workers: it always runs one search)."""
    if row["workers"] == 1 or row["engine"] in ("hf", ONE_SEARCH):
        return str(row["threads"])
    return f"{row['threads']} = {row['workers']} × {row['threads'] // row['workers']}"


def have_ctranslate2() -> bool:
    try:
        import ctranslate2  # noqa: F401
    except ImportError:
        return False
    return True


def working_ct2(make, folder, device, inter, intra, probe):
    """A CTranslate2 translator that has translated ``probe``, or None (with
    the reason) where it cannot: a CUDA build for another CUDA release loads
    its libraries only at the first translation."""
    try:
        ct2 = make(folder, device=device, inter_threads=inter, intra_threads=intra)
        ct2.translate_batch([probe], max_decoding_length=2)
    except (RuntimeError, OSError, ValueError) as error:
        print(f"CTranslate2 on {device} sits out: {error}", flush=True)
        return None
    return ct2


def identical(outputs: list[list[int]], reference: list[list[int]]) -> float:
    """The share of outputs equal token for token to the reference's."""
    same = sum(a == b for a, b in zip(outputs, reference, strict=True))
    return same / max(len(reference), 1)


def limit(batch_ids: list[list[int]]) -> int:
    return int(1.5 * max(len(s) for s in batch_ids) + 10)


def run_rosetta(translator, batches, beam, workers=1):
    """The batches as they are: ``decode_in_batches`` sorts by length (already
    so) and cuts the same batches of 32."""
    found = decode_in_batches(
        translator.model,
        [s[:-1] for ids in batches for s in ids],  # without <eos>: collate adds it
        translator.device,
        batch_size=len(batches[0]),
        options=SearchOptions(beam_size=beam, **SEARCH),
        workers=workers,
    )
    return [f[0].tokens for f in found]


def run_marian(marian, batches, beam):
    outputs = []
    device = marian.device
    for ids in batches:
        width = max(len(s) for s in ids)
        src = torch.tensor([s + [PAD_ID] * (width - len(s)) for s in ids])
        src = src.to(device)
        generated = marian.generate(
            input_ids=src,
            attention_mask=(src != PAD_ID).long(),
            num_beams=beam,
            do_sample=False,
            length_penalty=ALPHA,
            max_new_tokens=limit(ids),
            early_stopping=True,
        )
        for row in generated.tolist():
            tokens = row[1:]  # after the start token
            outputs.append(
                tokens[: tokens.index(EOS_ID)] if EOS_ID in tokens else tokens
            )
    return outputs


def run_ctranslate2(ct2, pieces_of, batches, beam):
    """Every batch submitted at once: with inter_threads > 1, CT2 decodes that
    many batches at a time."""
    pending = [
        ct2.translate_batch(
            [pieces_of(s) for s in ids],
            beam_size=beam,
            length_penalty=ALPHA,
            max_decoding_length=limit(ids),
            min_decoding_length=0,  # as Rosetta: a translation may end at once
            max_batch_size=len(ids),
            asynchronous=True,
        )
        for ids in batches
    ]
    return [r.result().hypotheses[0] for results in pending for r in results]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", default="runs/quality-multi30k-de-en-transformer")
    parser.add_argument("--config", default="configs/multi30k-de-en-transformer.yaml")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 5])
    parser.add_argument(
        "--batch-1-sentences",
        type=int,
        default=100,
        help="batch 1 decodes only the first N sentences (it is slow for all)",
    )
    parser.add_argument("--sentences", type=int, default=None, help="first N only")
    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="fp32",
        help="int8: Rosetta and HF with int8 linear layers, CT2 int8; bf16: "
        "Rosetta and HF under bf16 autocast, CT2 float32",
    )
    parser.add_argument(
        "--workers",
        action="store_true",
        help="at T threads, Rosetta decodes T batches at once with one thread "
        "each (workers=T) and CT2 likewise (inter_threads=T, intra_threads=1); "
        "HF has no such mode and uses T threads in one generate(); Rosetta's "
        "one search on T threads runs too, as rosetta-one-search",
    )
    parser.add_argument(
        "--device", default="cpu", help="cpu or cuda: every engine decodes there"
    )
    parser.add_argument(
        "--compiled",
        action="store_true",
        help="Rosetta with its compiled decoding step too, as rosetta-compiled",
    )
    parser.add_argument(
        "--json", default=None, help="default: results/decode_speed-[D-]P.json"
    )
    args = parser.parse_args()
    device = torch.device(args.device)
    on_gpu = device.type == "cuda"
    if on_gpu and not torch.cuda.is_available():
        raise SystemExit("--device cuda: this PyTorch sees no CUDA GPU")
    if on_gpu and args.workers:
        raise SystemExit("--workers is for the CPU; a GPU runs one search")
    if on_gpu:
        args.threads = args.threads[:1]  # host threads: one row, not a sweep
    stem = f"{device.type}-{args.precision}" if on_gpu else args.precision
    args.json = args.json or f"benchmarks/results/decode_speed-{stem}.json"

    # float32, through the layers: the model the peers' copies are made from
    translator = load_translator(args.run_dir, device="cpu", packed=False)
    pairs = read_corpus(load_config(args.config).data.test)
    pairs = pairs[: args.sentences]
    sources = [[*translator.tokenizers.src.encode(s), EOS_ID] for s, _ in pairs]
    references = [t for _, t in pairs]
    tgt = translator.tokenizers.tgt
    marian = to_marian(translator)
    difference = check_copy(translator, marian, [s for s, _ in pairs[:64]])
    assert difference < 1e-3, f"the Marian copy differs by {difference}"
    workdir = Path(tempfile.mkdtemp(prefix="rosetta-ct2-")) / "model"
    quantization = "int8" if args.precision == "int8" else None
    ct2_device = None  # CT2 sits out where it is not installed or has no CUDA
    if have_ctranslate2():
        export_model("ctranslate2", Path(args.run_dir), workdir, quantization)
        ctranslate2 = import_ctranslate2()
        ct2_device = "cpu"
        if on_gpu:
            cuda = ctranslate2.get_cuda_device_count() > 0
            ct2_device = "cuda" if cuda else None
    else:
        print("CTranslate2 is not installed: it sits out", flush=True)
    if args.precision == "int8":
        marian = quantize_int8(marian)
    marian = marian.to(device)
    ours = load_translator(
        args.run_dir, device=device, precision=args.precision, compiled=False
    )
    compiled = None
    if args.compiled:
        compiled = load_translator(
            args.run_dir, device=device, precision=args.precision, compiled=True
        )
    src_vocab = translator.tokenizers.src

    def pieces_of(ids):
        return [*src_vocab.id_pieces(ids[:-1]), EOS]

    def ct2_ids(output):
        return [tgt_index.get(p, 1) for p in output]

    tgt_index = {p: i for i, p in enumerate(tgt.id_pieces(range(len(tgt))))}
    print(f"copies checked: Marian max |Δ log P| = {difference:.2e}")

    rows = []
    for threads in args.threads:
        torch.set_num_threads(threads)
        inter = threads if args.workers else 1
        engines = {
            "rosetta": lambda b, k, inter=inter: run_rosetta(ours, b, k, inter),
        }
        if inter > 1:  # Rosetta's own workers against its one search, same run
            engines[ONE_SEARCH] = lambda b, k: run_rosetta(ours, b, k, 1)
        if compiled is not None:
            engines[COMPILED] = lambda b, k: run_rosetta(compiled, b, k)
        engines["hf"] = lambda b, k: run_marian(marian, b, k)
        ct2 = None
        if ct2_device:  # a CT2 build without CUDA sits out on a GPU
            ct2 = working_ct2(
                ctranslate2.Translator,
                str(workdir),
                ct2_device,
                inter,
                threads // inter,
                pieces_of(sources[0]),
            )
        if ct2 is not None:
            engines["ct2"] = lambda b, k, ct2=ct2: [
                ct2_ids(o) for o in run_ctranslate2(ct2, pieces_of, b, k)
            ]
        for batch_size in args.batch_sizes:
            count = args.batch_1_sentences if batch_size == 1 else len(sources)
            order = sorted(range(count), key=lambda i: len(sources[i]))
            batches = [
                [sources[i] for i in order[s : s + batch_size]]
                for s in range(0, count, batch_size)
            ]
            for beam in args.beams:
                times: dict[str, list[float]] = {e: [] for e in engines}
                outputs: dict[str, list[list[int]]] = {}
                warmup = None
                if compiled is not None:  # compiles and records, untimed
                    synchronize(device)
                    started = time.perf_counter()
                    with autocast(device, args.precision):
                        engines[COMPILED](batches, beam)
                    synchronize(device)
                    warmup = round(time.perf_counter() - started, 2)
                for _ in range(args.repeats):
                    for name, engine in engines.items():  # interleaved
                        synchronize(device)
                        started = time.perf_counter()
                        with autocast(device, args.precision):
                            outputs[name] = engine(batches, beam)
                        synchronize(device)
                        times[name].append(time.perf_counter() - started)
                for name in engines:
                    ordered = [None] * count
                    for i, out in zip(order, outputs[name], strict=True):
                        ordered[i] = out
                    hyps = [tgt.decode(o) for o in ordered]
                    tokens = sum(len(o) for o in ordered)
                    median = statistics.median(times[name])
                    rows.append(
                        {
                            "engine": name,
                            "precision": args.precision,
                            "threads": threads,
                            "workers": inter,
                            "batch": batch_size,
                            "beam": beam,
                            "sentences": count,
                            "seconds_median": round(median, 3),
                            "seconds_min": round(min(times[name]), 3),
                            "seconds_max": round(max(times[name]), 3),
                            "sentences_per_s": round(count / median, 1),
                            "tokens_per_s": round(tokens / median, 1),
                            "generated_tokens": tokens,
                            "bleu": round(
                                sacrebleu_score(hyps, references[:count]).value, 2
                            ),
                            "same_as_rosetta": round(
                                identical(outputs[name], outputs["rosetta"]), 4
                            ),
                            "device": device_name(device),
                        }
                    )
                    if name == COMPILED:
                        rows[-1]["warmup_s"] = warmup
                    print(rows[-1], flush=True)

    print(
        f"\nMachine: {device_name(device)}, torch {torch.__version__}, "
        f"precision {args.precision}"
    )
    print(
        "| threads | batch | beam | engine | sent/s (median) | spread (s) "
        "| tokens/s | BLEU | same as Rosetta | Rosetta ÷ engine |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        ours = next(
            r
            for r in rows
            if r["engine"] == "rosetta"
            and (r["threads"], r["batch"], r["beam"])
            == (row["threads"], row["batch"], row["beam"])
        )
        ratio = ours["sentences_per_s"] / row["sentences_per_s"]
        print(
            f"| {threads_label(row)} | {row['batch']} | {row['beam']} "
            f"| {row['engine']} "
            f"| {row['sentences_per_s']} | {row['seconds_min']}–{row['seconds_max']} "
            f"| {row['tokens_per_s']} | {row['bleu']} "
            f"| {row['same_as_rosetta']:.1%} | {ratio:.2f} |"
        )
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
