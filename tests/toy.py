"""A tiny synthetic parallel corpus and config: target = source words reversed."""

from __future__ import annotations

import random
from pathlib import Path

from rosetta.config.reading import load_config
from rosetta.config.schema import Config

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "eps",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
]


def write_corpus(folder: Path, count: int, seed: int) -> tuple[Path, Path]:
    rng = random.Random(seed)
    src_lines, tgt_lines = [], []
    for _ in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(2, 6))]
        src_lines.append(" ".join(words))
        tgt_lines.append(" ".join(reversed(words)).upper())
    src, tgt = folder / f"{seed}.src", folder / f"{seed}.tgt"
    src.write_text("\n".join(src_lines) + "\n")
    tgt.write_text("\n".join(tgt_lines) + "\n")
    return src, tgt


TRANSFORMER = """{encoder_layers: 1, decoder_layers: 1, d_model: 32, heads: 2, d_ff: 64,
   dropout: 0.1, share_embeddings: false, max_positions: 64}"""
TRANSFORMER_RELATIVE = TRANSFORMER.replace("}", ", positions: relative}")
NAT = """{arch: nat, encoder_layers: 1, decoder_layers: 1, d_model: 32, heads: 2,
   d_ff: 64, dropout: 0.1, share_embeddings: false, max_positions: 64,
   max_fertility: 3}"""
RNN_ATTENTION = """{arch: rnn, cell: gru, encoder_layers: 1, decoder_layers: 1,
   d_model: 32, hidden_size: 32, bidirectional: true, attention: bahdanau,
   dropout: 0.1, share_embeddings: false}"""


def toy_config(
    folder: Path, *overrides: str, model: str = TRANSFORMER
) -> tuple[Config, Path]:
    train_src, train_tgt = write_corpus(folder, 400, seed=1)
    valid_src, valid_tgt = write_corpus(folder, 30, seed=2)
    path = folder / "toy.yaml"
    path.write_text(
        f"""
data:
  train: {{src: {train_src.name}, tgt: {train_tgt.name}}}
  valid: {{src: {valid_src.name}, tgt: {valid_tgt.name}}}
  test: {{src: {valid_src.name}, tgt: {valid_tgt.name}}}
tokenizer: {{kind: word, joint: false}}
model:
  {model}
train:
  {{batch_tokens: 300, lr: 3.0e-3, warmup_steps: 10, max_epochs: 3,
   validate_every: 10, log_every: 5, keep_last: 2, threads: 1}}
decode: {{batch_size: 16}}
"""
    )
    return load_config(path, list(overrides)), path


SHAKESPEARE = Path(__file__).parent.parent / "data" / "tinyshakespeare"


def toy_lm_config(folder: Path, *overrides: str) -> tuple[Config, Path]:
    """A 2-layer character Transformer-XL on 12,000 characters of Shakespeare
    (3,000 for validation), 16-character segments with 16 of memory."""
    import gzip

    text = gzip.decompress((SHAKESPEARE / "valid.txt.gz").read_bytes()).decode()
    (folder / "train.txt").write_text(text[:12000])
    (folder / "valid.txt").write_text(text[12000:15000])
    path = folder / "lm.yaml"
    path.write_text(
        """
task: lm
data:
  train: {text: train.txt}
  valid: {text: valid.txt}
tokenizer: {kind: char}
model: {arch: transformer-xl, layers: 2, d_model: 32, heads: 2, d_ff: 64,
  dropout: 0.1, segment_length: 16, memory_length: 16, eval_streams: 4}
train:
  {batch_tokens: 128, lr: 3.0e-3, warmup_steps: 10, max_epochs: null,
   max_steps: 12, validate_every: 6, log_every: 3, keep_last: 3, threads: 1,
   label_smoothing: 0.0}
"""
    )
    return load_config(path, list(overrides)), path
