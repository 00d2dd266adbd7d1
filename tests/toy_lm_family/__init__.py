"""A second language-model family written outside Rosetta's source, from
docs/families.md alone: an embedding, stacked GRU layers and a projection
(``model.arch: toy-lm``, ``task: lm``). It reuses every language model's
preparation, training task and inference object; ``tests/families/test_new_family.py``
puts it in the list of families and runs the commands on it."""

from __future__ import annotations

from rosetta.families.family import Family, Later
from tests.toy_lm_family.config import ToyLMConfig

FAMILY = Family(
    summary="a toy recurrent language model written outside Rosetta",
    config=ToyLMConfig,
    build=Later("tests.toy_lm_family.model", "build"),
    prepare=Later("rosetta.train.prepare", "prepare_text"),
    training=Later("rosetta.train.language_model_task", "lm_training"),
    inference=Later("rosetta.inference.language_model", "language_model"),
    example={
        "arch": "toy-lm",
        "layers": 2,
        "d_model": 32,
        "segment_length": 16,
        "memory_length": 1,
        "eval_streams": 2,
    },
)
