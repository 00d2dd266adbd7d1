"""The Transformer-XL language model (``model.arch: transformer-xl``,
``task: lm``): a decoder-only Transformer that reads a long text in
segments, each attending to the states the previous ones left in memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rosetta.families.family import Family, Later
from rosetta.families.transformer_xl.config import TransformerXLConfig

if TYPE_CHECKING:
    from rosetta.families.transformer_xl.model import MemoryTransformerLM

# the config keys MemoryTransformerLM takes under their own names
SAME_NAMES = {
    "layers",
    "d_model",
    "heads",
    "d_ff",
    "dropout",
    "attention_dropout",
    "memory_length",
}


def build(
    config: TransformerXLConfig,
    src_vocab: int,
    tgt_vocab: int,
    tokenizers: object = None,
) -> MemoryTransformerLM:
    """A language model reads and writes one vocabulary, the target's;
    ``tokenizers`` change nothing."""
    from rosetta.families.transformer_xl.model import MemoryTransformerLM

    sizes = config.model_dump(include=SAME_NAMES)
    return MemoryTransformerLM(tgt_vocab, **sizes, norm_first=config.norm == "pre")


FAMILY = Family(
    summary="the Transformer-XL language model (task: lm)",
    config=TransformerXLConfig,
    build=build,
    prepare=Later("rosetta.train.prepare", "prepare_text"),
    training=Later("rosetta.train.language_model_task", "lm_training"),
    inference=Later("rosetta.inference.language_model", "language_model"),
    example={
        "arch": "transformer-xl",
        "layers": 2,
        "d_model": 32,
        "heads": 2,
        "d_ff": 64,
        "segment_length": 16,
        "memory_length": 16,
        "eval_streams": 4,
    },
)
