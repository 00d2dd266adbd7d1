"""A tiny synthetic parallel corpus and config: target = source words reversed."""

from __future__ import annotations

import random
from pathlib import Path

from rosetta.config.schema import Config
from rosetta.jobs.run_config import load_config
from tests.support.paths import ROOT

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
NAT_CTC_GLANCING = NAT.replace(
    "max_fertility: 3}",
    "length_model: ctc, upsample: 2, glance_ratio: 0.5, glance_ratio_end: 0.2,\n"
    "   glance_anneal_updates: 15}",
)
RNN_ATTENTION = """{arch: rnn, cell: gru, encoder_layers: 1, decoder_layers: 1,
   d_model: 32, hidden_size: 32, bidirectional: true, attention: bahdanau,
   dropout: 0.1, share_embeddings: false}"""
# every translation family's toy, by the name tests give it
TOY_MODELS = {
    "transformer": TRANSFORMER,
    "transformer-relative": TRANSFORMER_RELATIVE,
    "rnn-attention": RNN_ATTENTION,
    "nat": NAT,
    "nat-ctc": NAT_CTC_GLANCING,
}


def toy_config(
    folder: Path, *overrides: str, model: str = TRANSFORMER
) -> tuple[Config, Path]:
    path = toy_config_file(folder, model)
    return load_config(path, list(overrides)), path


# a budget of updates, not epochs: a checkpoint every 10
STEPS = ("train.max_epochs=null", "train.validate_every=10")


def toy_config_for_steps(tmp_path, steps=30):
    """The toy configuration trained for ``steps`` updates."""
    return toy_config(tmp_path, *STEPS, f"train.max_steps={steps}")[0]


def toy_config_file(folder: Path, model: str = TRANSFORMER) -> Path:
    """The toy corpus and its config in ``folder`` (not read back: a process
    that lists other families may read it); the config's path."""
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
    return path


SHAKESPEARE = ROOT / "data" / "tinyshakespeare"


LM = """{arch: transformer-xl, layers: 2, d_model: 32, heads: 2, d_ff: 64,
  dropout: 0.1, segment_length: 16, memory_length: 16, eval_streams: 4}"""


def toy_lm_config(
    folder: Path, *overrides: str, model: str = LM
) -> tuple[Config, Path]:
    """A 2-layer character Transformer-XL on 12,000 characters of Shakespeare
    (3,000 for validation), 16-character segments with 16 of memory."""
    path = toy_lm_config_file(folder, model)
    return load_config(path, list(overrides)), path


def toy_lm_config_file(folder: Path, model: str = LM) -> Path:
    """``toy_lm_config``'s file and text, not read (a family this process
    does not list may be named)."""
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
model: MODEL
train:
  {batch_tokens: 128, lr: 3.0e-3, warmup_steps: 10, max_epochs: null,
   max_steps: 12, validate_every: 6, log_every: 3, keep_last: 3, threads: 1,
   label_smoothing: 0.0}
""".replace("MODEL", model)
    )
    return path


def assert_resume_is_exact(folder: Path, model: str, before_split=None) -> None:
    """Twenty updates in one run and in two (ten, then resumed) end with the
    same weights. ``before_split(split_folder)`` prepares the second run's
    folder first."""
    import torch
    from safetensors.torch import load_file

    from rosetta.jobs.training import run_training
    from rosetta.runs.checkpoint import resolve_checkpoint

    steps = ("train.max_epochs=null", "train.validate_every=10")
    whole, _ = toy_config(folder, *steps, "train.max_steps=20", model=model)
    run_training(whole, folder / "whole")
    half, _ = toy_config(folder, *steps, "train.max_steps=10", model=model)
    (folder / "split").mkdir()
    if before_split is not None:
        before_split(folder / "split")
    run_training(half, folder / "split")
    run_training(whole, folder / "split", resume=True)
    weights = [
        load_file(resolve_checkpoint(folder / name, "latest") / "model.safetensors")
        for name in ("whole", "split")
    ]
    for key, tensor in weights[0].items():
        assert torch.equal(tensor, weights[1][key]), key
