"""Same outputs before and after a change to the code: every model family.

Trains a small model of every family for 40 updates (Transformer with three
position schemes, recurrent, non-autoregressive, Transformer-XL language
model), then decodes test_2016 every way Rosetta offers (greedy, beam 5 with
5-best lists and scores, int8, seeded sampling; NAT argmax and noisy parallel
decoding; perplexity and seeded generation) through the command line, and
writes every output and each run's training log and weights' checksum to a
folder. Run it on two versions and compare the folders::

    python benchmarks/family_equivalence.py --out /tmp/before
    # ... change the code ...
    python benchmarks/family_equivalence.py --out /tmp/after
    python benchmarks/family_equivalence.py --compare /tmp/before /tmp/after

``--runs-from /tmp/before`` decodes with the runs trained by the earlier
version (checkpoints read by the new code) besides training new ones, and
gives the new NAT run the earlier one's word alignments: eflomal draws its
samples unseeded, so two alignments of one corpus differ (a run keeps its
own in ``alignments.txt`` and reuses them on resume). Wall-clock fields of
the training log are left out; everything else must be byte-identical.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

from harness import ROOT

MULTI30K = ROOT / "data" / "multi30k"
SHAKESPEARE = ROOT / "data" / "tinyshakespeare"
SENTENCES = 300  # of test_2016: enough to see any difference, quick to decode
UPDATES = 40
ALIGNMENTS = "alignments.txt"  # what a NAT run keeps of eflomal's output

COMMON_MODEL = "encoder_layers: 2, decoder_layers: 2, d_model: 64, dropout: 0.1"
ATTENTION = f"{COMMON_MODEL}, heads: 4, d_ff: 128, max_positions: 256"
FAMILIES = {
    "transformer": f"{{arch: transformer, {ATTENTION}}}",
    "transformer-relative": f"{{arch: transformer, {ATTENTION}, positions: relative}}",
    "transformer-alibi": f"{{arch: transformer, {ATTENTION}, positions: alibi}}",
    "rnn": f"{{arch: rnn, {COMMON_MODEL}, hidden_size: 64, cell: gru, "
    "bidirectional: true, attention: bahdanau}",
    "nat": f"{{arch: nat, {ATTENTION}, max_fertility: 4}}",
}
TRANSLATION_CONFIG = """data:
  train: {{src: {data}/train.de.gz, tgt: {data}/train.en.gz}}
  valid: {{src: {data}/val.de.gz, tgt: {data}/val.en.gz}}
  src_lang: de
  tgt_lang: en
  max_len: 60
tokenizer: {{kind: sentencepiece, vocab_size: 2000, joint: true}}
model: {model}
train: {{batch_tokens: 1500, lr: 2.0e-3, warmup_steps: 10, max_epochs: null,
  max_steps: {updates}, validate_every: 20, log_every: 5, keep_last: 2,
  threads: 2, valid_bleu: false}}
"""
LM_CONFIG = """task: lm
data:
  train: {{text: {text}}}
  valid: {{text: {valid}}}
tokenizer: {{kind: char}}
model: {{arch: transformer-xl, layers: 2, d_model: 64, heads: 4, d_ff: 128,
  dropout: 0.1, segment_length: 32, memory_length: 32, eval_streams: 4}}
train: {{batch_tokens: 512, lr: 2.0e-3, warmup_steps: 10, max_epochs: null,
  max_steps: {updates}, validate_every: 20, log_every: 5, keep_last: 2,
  threads: 2, label_smoothing: 0.0}}
"""
CLOCK_FIELDS = ("time", "elapsed", "seconds", "per_s", "per_second", "wps", "tps")


def rosetta(*args: str | Path, out: Path | None = None) -> None:
    command = [sys.executable, "-m", "rosetta", *map(str, args)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
    if out is not None:
        out.write_text(result.stdout)


def weights_digest(run: Path) -> str:
    """SHA-256 over the tensors of the run's latest checkpoint."""
    index = json.loads((run / "checkpoints.json").read_text())
    folder = run / index["latest"]
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.safetensors")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()


def training_log(run: Path) -> str:
    lines = []
    for line in (run / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        kept = {
            key: value
            for key, value in record.items()
            if not any(part in key for part in CLOCK_FIELDS)
        }
        lines.append(json.dumps(kept, sort_keys=True))
    return "\n".join(lines) + "\n"


def train(
    name: str, config_text: str, work: Path, out: Path, earlier: Path | None
) -> Path:
    config = work / f"{name}.yaml"
    config.write_text(config_text)
    run = work / f"run-{name}"
    alignments = None if earlier is None else earlier / f"run-{name}" / ALIGNMENTS
    if alignments is not None and alignments.is_file():
        run.mkdir()
        shutil.copyfile(alignments, run / ALIGNMENTS)
    rosetta("train", config, "-o", run)
    (out / f"{name}.train.jsonl").write_text(training_log(run))
    (out / f"{name}.weights.sha256").write_text(weights_digest(run) + "\n")
    return run


def decode_all(
    name: str, family: str, run: Path, teacher: Path, source: Path, out: Path
) -> None:
    translate = ("translate", "-m", run, "-i", source)
    if family == "nat":
        rosetta(*translate, "--format", "jsonl", out=out / f"{name}.argmax.jsonl")
        rosetta(
            *translate,
            "--format",
            "jsonl",
            "--npd",
            "3",
            "--teacher",
            teacher,
            out=out / f"{name}.npd.jsonl",
        )
        return
    rosetta(*translate, "--format", "jsonl", out=out / f"{name}.greedy.jsonl")
    rosetta(
        *translate,
        "--beam",
        "5",
        "--nbest",
        "5",
        "--format",
        "jsonl",
        out=out / f"{name}.beam5.jsonl",
    )
    rosetta(*translate, "--precision", "int8", out=out / f"{name}.int8.txt")
    rosetta(*translate, "--sample", "--seed", "7", out=out / f"{name}.sample.txt")


def produce(out: Path, runs_from: Path | None) -> None:
    out.mkdir(parents=True, exist_ok=False)
    work = out / "work"
    work.mkdir()
    lines = gzip.decompress((MULTI30K / "test_2016_flickr.de.gz").read_bytes())
    source = work / "test_2016.de"
    source.write_text("\n".join(lines.decode().splitlines()[:SENTENCES]) + "\n")
    runs = {}
    earlier = None if runs_from is None else runs_from / "work"
    for name, model in FAMILIES.items():
        text = TRANSLATION_CONFIG.format(data=MULTI30K, model=model, updates=UPDATES)
        runs[name] = train(name, text, work, out, earlier)
        print(f"trained {name}", flush=True)
    valid = work / "valid.txt"
    text = gzip.decompress((SHAKESPEARE / "valid.txt.gz").read_bytes()).decode()
    valid.write_text(text[:20000])
    lm_text = LM_CONFIG.format(
        text=SHAKESPEARE / "train.txt.gz", valid=valid, updates=UPDATES
    )
    runs["lm"] = train("lm", lm_text, work, out, earlier)
    print("trained lm", flush=True)
    sources = {"": runs}
    if runs_from is not None:
        sources["old-runs."] = {
            name: runs_from / "work" / f"run-{name}" for name in runs
        }
    for prefix, chosen in sources.items():
        for name, run in chosen.items():
            if name == "lm":
                rosetta(
                    "perplexity", "-m", run, "--text", valid, "--streams", "4",
                    out=out / f"{prefix}lm.perplexity.txt",
                )  # fmt: skip
                rosetta(
                    "generate", "-m", run, "--prompt", "ROMEO:", "--tokens", "200",
                    "--top-k", "10", "--seed", "3",
                    out=out / f"{prefix}lm.generate.txt",
                )  # fmt: skip
            else:
                teacher = chosen["transformer"]
                decode_all(prefix + name, name, run, teacher, source, out)
            print(f"decoded {prefix}{name}", flush=True)


def compare(before: Path, after: Path) -> int:
    names = sorted(
        {p.name for p in before.iterdir() if p.is_file()}
        | {p.name for p in after.iterdir() if p.is_file()}
    )
    different = 0
    print(f"| output | {before} | {after} |")
    print("|---|---|---|")
    for name in names:
        old, new = before / name, after / name
        if not old.exists() or not new.exists():
            print(f"| {name} | {'yes' if old.exists() else '-'} | "
                  f"{'yes' if new.exists() else '-'} |")  # fmt: skip
            continue
        same = old.read_bytes() == new.read_bytes()
        different += not same
        print(f"| {name} | | {'identical' if same else 'DIFFERENT'} |")
    print(f"{different} of {len(names)} outputs differ")
    return 1 if different else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="write every output here (new)")
    parser.add_argument("--runs-from", type=Path, help="also decode these runs")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        parser.error("give --out DIR or --compare A B")
    produce(args.out, args.runs_from)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
