"""A second language-model family written outside Rosetta's source, from
docs/families.md alone: an embedding, stacked GRU layers and a projection
(``model.arch: toy-lm``, ``task: lm``). It reuses every language model's
preparation, training task and inference object; ``tests/families/test_new_family.py``
puts it in the list of families and runs the commands on it."""

from __future__ import annotations

from rosetta.families.family import Family
from rosetta.inference.language_model import language_model
from rosetta.train.language_model_task import lm_training
from rosetta.train.prepare import prepare_text
from tests.toy_lm_family.config import ToyLMConfig
from tests.toy_lm_family.model import build

FAMILY = Family(
    summary="a toy recurrent language model written outside Rosetta",
    config=ToyLMConfig,
    build=build,
    prepare=prepare_text,
    training=lm_training,
    inference=language_model,
    example={
        "arch": "toy-lm",
        "layers": 2,
        "d_model": 32,
        "segment_length": 16,
        "memory_length": 1,
        "eval_streams": 2,
    },
)
