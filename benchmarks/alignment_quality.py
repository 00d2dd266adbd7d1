"""How good are the word alignments a NAT's fertilities come from?

Scores eflomal's forward alignments against hand-made word alignments of 20
Multi30k test_2016 pairs (``benchmarks/data/multi30k-de-en-gold-alignments.tsv``,
sure links only): precision, recall and the alignment error rate
``AER = 1 − 2|A ∩ S| / (|A| + |S|)`` (with sure links only, 1 − F1). The
test pairs are aligned together with the 29,000 training pairs, as training
aligns its pairs, in two ways:

- **words**: lower-cased words and punctuation marks, as the gold file;
- **subwords**: the sentencepiece tokens of a run (what ``model.arch: nat``
  training aligns), each link mapped to the words the two tokens belong to.

eflomal samples, so each is repeated; the table has the median and range.
Beside it, the alternative of reading alignments off a trained
autoregressive model (``--teacher``): each target token is linked to the
source token its cross-attention weighs most (one layer, mean over the
heads, ``<eos>`` left out) when the reference is teacher-forced; one row
per layer.

    python benchmarks/alignment_quality.py --run runs/multi30k-de-en-nat \
        --teacher runs/quality-multi30k-de-en-transformer
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path

import torch

from rosetta import Translator
from rosetta.data.corpus import read_parallel
from rosetta.data.tokenizer import TokenizerPair
from rosetta.data.vocab import BOS_ID, EOS_ID, PAD_ID
from rosetta.families.nat.align import align, parse_links
from rosetta.jobs.loading import load_translator
from rosetta.train.prepare import TOKENIZER_FILE

WORD = re.compile(r"\w+(?:-\w+)*|[^\w\s]")
GOLD = Path(__file__).parent / "data" / "multi30k-de-en-gold-alignments.tsv"


def word_spans(text: str) -> list[tuple[int, int]]:
    return [match.span() for match in WORD.finditer(text)]


def piece_words(text: str, pieces: list[str]) -> list[int]:
    """The index of the word each sentencepiece token starts in."""
    spans = word_spans(text)
    words, position = [], 0
    for piece in pieces:
        piece = piece.replace("\u2581", "")
        found = text.find(piece, position) if piece else -1
        start = found if found >= 0 else position
        position = start + len(piece)
        inside = [w for w, (a, b) in enumerate(spans) if a <= start < b]
        after = [w for w, (a, _) in enumerate(spans) if a >= start]
        words.append(inside[0] if inside else after[0] if after else len(spans) - 1)
    return words


@torch.no_grad()
def attention_links(
    translator: Translator, source: str, target: str
) -> list[list[tuple[int, int]]]:
    """Per decoder layer, the word links of the teacher-forced reference's
    strongest cross-attention (module docstring)."""
    tokenizers, model = translator.tokenizers, translator.model
    src_ids = tokenizers.src.encode(source)
    tgt_ids = tokenizers.tgt.encode(target)
    src = torch.tensor([[*src_ids, EOS_ID]])
    tgt_in = torch.tensor([[BOS_ID, *tgt_ids]])
    mask = src != PAD_ID
    state = model.decoder.init_state(model.encode(src, mask), mask)
    _, state = model.decoder(tgt_in, state, tgt_in != PAD_ID, need_attention=True)
    weights = state.attention[0, : len(tgt_ids)]  # (T, layers, heads, S)
    src_words = piece_words(source, tokenizers.src.id_pieces(src_ids))
    tgt_words = piece_words(target, tokenizers.tgt.id_pieces(tgt_ids))
    links = []
    for layer in range(weights.size(1)):
        strongest = weights[:, layer].mean(1)[:, :-1].argmax(-1).tolist()
        links.append([(src_words[i], tgt_words[j]) for j, i in enumerate(strongest)])
    return links


def scores(found: list[set], gold: list[set]) -> dict[str, float]:
    right = sum(len(a & s) for a, s in zip(found, gold, strict=True))
    proposed = sum(len(a) for a in found)
    sure = sum(len(s) for s in gold)
    return {
        "precision": right / proposed,
        "recall": right / sure,
        "aer": 1 - 2 * right / (proposed + sure),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default="runs/multi30k-de-en-nat")
    parser.add_argument("--train-src", default="data/multi30k/train.de.gz")
    parser.add_argument("--train-tgt", default="data/multi30k/train.en.gz")
    parser.add_argument("--test-src", default="data/multi30k/test_2016_flickr.de.gz")
    parser.add_argument("--test-tgt", default="data/multi30k/test_2016_flickr.en.gz")
    parser.add_argument(
        "--teacher",
        default="runs/quality-multi30k-de-en-transformer",
        help="an autoregressive Transformer run ('' to leave it out)",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default="benchmarks/results/alignment_quality.json")
    args = parser.parse_args()

    train = read_parallel(Path(args.train_src), Path(args.train_tgt))
    test = read_parallel(Path(args.test_src), Path(args.test_tgt))
    gold_lines = [
        line.split("\t")
        for line in GOLD.read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    ]
    pairs = [test[int(number) - 1] for number, _ in gold_lines]
    gold = [
        set(parse_links(links, f"{GOLD}, pair {number}"))
        for number, links in gold_lines
    ]

    def words(text: str) -> str:
        return " ".join(WORD.findall(text.lower()))

    state = json.loads((Path(args.run) / TOKENIZER_FILE).read_text(encoding="utf-8"))
    tokenizers = TokenizerPair.from_dict(state["tokenizers"])

    def subwords(text: str, side) -> tuple[str, list[int]]:
        ids = side.encode(text)
        return " ".join(map(str, ids)), piece_words(text, side.id_pieces(ids))

    every = [*train, *pairs]
    word_sources = [words(s) for s, _ in every]
    word_targets = [words(t) for _, t in every]
    src_tokens = [subwords(s, tokenizers.src) for s, _ in pairs]
    tgt_tokens = [subwords(t, tokenizers.tgt) for _, t in pairs]
    sub_sources = [" ".join(map(str, tokenizers.src.encode(s))) for s, _ in train]
    sub_targets = [" ".join(map(str, tokenizers.tgt.encode(t))) for _, t in train]
    sub_sources += [text for text, _ in src_tokens]
    sub_targets += [text for text, _ in tgt_tokens]

    runs: dict[str, list[dict[str, float]]] = {"words": [], "subwords": []}
    for repeat in range(args.repeats):
        print(f"repeat {repeat + 1}: aligning {len(every):,} pairs twice", flush=True)
        found = align(word_sources, word_targets)[len(train) :]
        runs["words"].append(scores([set(f) for f in found], gold))
        found = align(sub_sources, sub_targets)[len(train) :]
        mapped = [
            {(src_map[i], tgt_map[j]) for i, j in links}
            for links, (_, src_map), (_, tgt_map) in zip(
                found, src_tokens, tgt_tokens, strict=True
            )
        ]
        runs["subwords"].append(scores(mapped, gold))

    if args.teacher:
        teacher = load_translator(args.teacher, device="cpu", packed=False)
        per_pair = [attention_links(teacher, s, t) for s, t in pairs]
        for layer in range(len(per_pair[0])):
            found_sets = [set(layers[layer]) for layers in per_pair]
            runs[f"teacher attention, layer {layer + 1}"] = [scores(found_sets, gold)]

    print(f"\n{len(gold)} hand-aligned pairs, {sum(map(len, gold))} sure links\n")
    print("| aligner | precision % | recall % | AER % |")
    print("|---|---|---|---|")
    summary = {}
    for name, found in runs.items():
        cells, summary[name] = [], {}
        for key in ("precision", "recall", "aer"):
            values = [100 * r[key] for r in found]
            summary[name][key] = [round(v, 1) for v in values]
            cells.append(
                f"{statistics.median(values):.1f} ({min(values):.1f}–{max(values):.1f})"
            )
        label = name if name.startswith("teacher") else f"eflomal on {name}"
        print(f"| {label} | {' | '.join(cells)} |")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(
        json.dumps({"settings": vars(args), "results": summary}, indent=1) + "\n"
    )


if __name__ == "__main__":
    main()
