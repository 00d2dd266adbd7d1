"""Terminology and prefixes: do constraints put the right words in, and
what do they cost?

On Multi30k test_2016 (de→en), each reference word that eflomal aligns to a
source word (the test pairs aligned together with the 29,000 training pairs,
lower-cased words and punctuation) and that the unconstrained beam-5
translation misses is a term the translator wants: up to two per sentence,
in reference order, words of three letters or more, become that sentence's
``include``. Reported, unconstrained and constrained: term accuracy (the
share of terms the output holds as a word), BLEU and chrF (sacreBLEU), the
share of constrained sentences whose best hypothesis meets its constraints,
and time at batch 1 and 32 (interleaved repeats; median and range), idle
and beside ``--busy N`` competing processes.

Prefixes: the reference's first k words (k = 1..5) as the prefix; the share
of sentences whose next word is the reference's next word, and the time per
sentence at batch 1 against no prefix. And the cost of a 20-token prefix
(the reference's first 20 target tokens, on the sentences that have them).

    python benchmarks/terminology.py --model runs/demo
    python benchmarks/terminology.py --model runs/demo --busy 2
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import sacrebleu

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ROOT, competing_load, spread, write_json
from rosetta import SearchOptions
from rosetta.data.vocab import SPECIALS
from rosetta.families.nat.align import align
from rosetta.jobs.loading import load_translator

DATA = ROOT / "data" / "multi30k"
WORD = re.compile(r"\w+|[^\w\s]")


def read_lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in handle]


def words(text: str) -> list[str]:
    return WORD.findall(text)


def terms_of(
    sources: list[str], references: list[str], plain: list[str], most: int = 2
) -> list[list[str]]:
    """Per sentence, reference words aligned to a source word that the
    unconstrained translation lacks (``most`` at most, in reference order)."""
    train_src = read_lines(DATA / "train.de.gz")
    train_tgt = read_lines(DATA / "train.en.gz")
    lowered = [" ".join(words(s.lower())) for s in [*train_src, *sources]]
    targets = [" ".join(words(t.lower())) for t in [*train_tgt, *references]]
    links = align(lowered, targets)[len(train_src) :]
    found = []
    for reference, output, pairs in zip(references, plain, links, strict=True):
        aligned = {target for _, target in pairs}
        have = set(words(output))
        chosen: list[str] = []
        for position, word in enumerate(words(reference)):
            fits = word.isalpha() and len(word) >= 3 and position in aligned
            if fits and word not in have and word not in chosen:
                chosen.append(word)
        found.append(chosen[:most])
    return found


def timed(translator, sentences, options, batch, constraints=None) -> float:
    began = time.perf_counter()
    translator.translate(sentences, options, batch_size=batch, constraints=constraints)
    return time.perf_counter() - began


def scores(outputs: list[str], references: list[str], terms: list[list[str]]) -> dict:
    held = sum(t in words(o) for o, ts in zip(outputs, terms, strict=True) for t in ts)
    total = sum(map(len, terms))
    return {
        "bleu": round(sacrebleu.corpus_bleu(outputs, [references]).score, 2),
        "chrf": round(sacrebleu.corpus_chrf(outputs, [references]).score, 2),
        "term_accuracy": round(held / max(total, 1), 4),
    }


def terminology(translator, sources, references, args) -> dict:
    beam = SearchOptions(beam_size=args.beam)
    plain = translator.translate(sources, beam, batch_size=32)
    tokenizer = translator.tokenizers.tgt
    writable = [  # a term with a character the vocabulary lacks cannot be met
        [t for t in ts if min(tokenizer.encode(t)) >= len(SPECIALS)]
        for ts in terms_of(sources, references, plain)
    ]
    terms = writable
    constraints = [{"include": t} if t else {} for t in terms]
    found = translator.translate_nbest(
        sources, beam, batch_size=32, constraints=constraints
    )
    constrained = [f[0].text if f else "" for f in found]
    asked = [i for i, t in enumerate(terms) if t]
    met = sum(found[i][0].constraints_met for i in asked)
    unmet = [  # kept for a look: which terms, and what the search made
        {
            "line": i + 1,
            "terms": terms[i],
            "output": constrained[i],
            "complete": found[i][0].complete,
        }
        for i in asked
        if not found[i][0].constraints_met
    ]
    unchanged = sum(constrained[i] == plain[i] for i, t in enumerate(terms) if not t)
    result = {
        "sentences": len(sources),
        "constrained_sentences": len(asked),
        "terms": sum(map(len, terms)),
        "plain": scores(plain, references, terms),
        "constrained": scores(constrained, references, terms),
        "constraints_met": round(met / max(len(asked), 1), 4),
        "empty_constraints_unchanged": f"{unchanged}/{len(sources) - len(asked)}",
        "unmet": unmet,
    }
    subset = asked[: args.batch1_lines]
    times: dict[str, dict[str, list[float]]] = {}
    for _ in range(args.repeats):  # interleaved: the machine's noise hits both
        for batch, rows in ((1, subset), (32, asked)):
            picked = [sources[i] for i in rows]
            wanted = [constraints[i] for i in rows]
            slot = times.setdefault(f"batch {batch}", {"plain": [], "constrained": []})
            slot["plain"].append(timed(translator, picked, beam, batch))
            slot["constrained"].append(timed(translator, picked, beam, batch, wanted))
    result["seconds"] = {
        batch: {kind: str(spread(values)) for kind, values in kinds.items()}
        for batch, kinds in times.items()
    }
    result["ratio"] = {
        batch: round(
            spread(kinds["constrained"]).median / spread(kinds["plain"]).median, 2
        )
        for batch, kinds in times.items()
    }
    return result


def prefixes(translator, sources, references, args) -> dict:
    search = SearchOptions(beam_size=args.beam)
    rows = list(range(min(args.batch1_lines, len(sources))))
    result: dict = {"sentences": len(rows), "by_k": {}}
    for k in range(1, 6):
        use = [i for i in rows if len(references[i].split()) > k]
        wanted = [{"prefix": " ".join(references[i].split()[:k])} for i in use]
        picked = [sources[i] for i in use]
        began = time.perf_counter()
        outputs = translator.translate(picked, search, batch_size=1, constraints=wanted)
        seconds = time.perf_counter() - began
        began = time.perf_counter()
        translator.translate(picked, search, batch_size=1)
        free = time.perf_counter() - began
        right = sum(
            out.split()[k : k + 1] == references[i].split()[k : k + 1]
            for out, i in zip(outputs, use, strict=True)
        )
        result["by_k"][k] = {
            "sentences": len(use),
            "next_word_accuracy": round(right / max(len(use), 1), 4),
            "ms_per_sentence": round(1000 * seconds / max(len(use), 1), 1),
            "ms_per_sentence_no_prefix": round(1000 * free / max(len(use), 1), 1),
        }
    tokenizer = translator.tokenizers.tgt
    long = [i for i in range(len(sources)) if len(tokenizer.encode(references[i])) > 20]
    long = long[: args.batch1_lines]
    wanted = [
        {"prefix": tokenizer.decode(tokenizer.encode(references[i])[:20])} for i in long
    ]
    picked = [sources[i] for i in long]
    with_prefix, without = [], []
    for _ in range(args.repeats):
        without.append(timed(translator, picked, search, 1))
        with_prefix.append(timed(translator, picked, search, 1, wanted))
    result["prefix_20_tokens"] = {
        "sentences": len(long),
        "seconds_without": str(spread(without)),
        "seconds_with": str(spread(with_prefix)),
        "ratio": round(
            spread(with_prefix).median / max(spread(without).median, 1e-9), 2
        ),
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="runs/demo", help="run or checkpoint folder")
    parser.add_argument("--lines", type=int, default=1000, help="test_2016 lines")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--batch1-lines", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--busy", type=int, default=0, help="competing processes")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default="benchmarks/results/terminology.json")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    translator = load_translator(args.model, device="cpu")
    sources = read_lines(DATA / "test_2016_flickr.de.gz")[: args.lines]
    references = read_lines(DATA / "test_2016_flickr.en.gz")[: args.lines]
    load = competing_load(args.busy) if args.busy else nullcontext()
    with load:
        results = {
            "model": args.model,
            "busy": args.busy,
            "terminology": terminology(translator, sources, references, args),
            "prefixes": prefixes(translator, sources, references, args),
        }
    write_json(args.out, results)
    term = results["terminology"]
    print(
        f"Terminology on test_2016 ({term['sentences']} lines, "
        f"{term['constrained_sentences']} with terms, {term['terms']} terms), "
        f"beam {args.beam}, busy {args.busy}"
    )
    print("| | BLEU | chrF | term accuracy |")
    print("|---|---|---|---|")
    for kind in ("plain", "constrained"):
        s = term[kind]
        print(f"| {kind} | {s['bleu']} | {s['chrf']} | {s['term_accuracy']:.1%} |")
    print(
        f"constraints met: {term['constraints_met']:.1%}; "
        f"{{}} unchanged: {term['empty_constraints_unchanged']}"
    )
    print("| batch | plain s | constrained s | ratio |")
    print("|---|---|---|---|")
    for batch, kinds in term["seconds"].items():
        print(
            f"| {batch} | {kinds['plain']} | {kinds['constrained']} | "
            f"{term['ratio'][batch]} |"
        )
    print("| prefix words | sentences | next word right | ms/sentence | without |")
    print("|---|---|---|---|---|")
    for k, row in results["prefixes"]["by_k"].items():
        print(
            f"| {k} | {row['sentences']} | {row['next_word_accuracy']:.1%} | "
            f"{row['ms_per_sentence']} | {row['ms_per_sentence_no_prefix']} |"
        )
    long = results["prefixes"]["prefix_20_tokens"]
    print(
        f"20-token prefix on {long['sentences']} sentences: {long['seconds_with']} s "
        f"vs {long['seconds_without']} s without (ratio {long['ratio']})"
    )


if __name__ == "__main__":
    main()
