"""The host's work per training update: ATen operators, counted.

On a GPU a small model's update is bound by the operators the host issues,
so they must grow with the layers (and their parameters) and with nothing
else: not with the sentences of a batch, nor with its tokens. A loop over the
rows of a batch (padding it a sentence at a time) breaks both tests below.
``benchmarks/train_operators.py`` counts the same at full size.
"""

from collections import Counter

import numpy as np
import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from rosetta.data import EncodedPairs, Example
from rosetta.families import build_model, family_of
from rosetta.jobs.training import configure_torch, process_settings_kept
from rosetta.train.prepare import PreparedData
from rosetta.train.trainer import Trainer
from rosetta.train.translation_task import TranslationTask
from tests.support.toy import toy_config

CPU = torch.device("cpu")
VOCAB = 64
# Measured with torch 2.13 on a CPU: 374 + 1,724 per encoder+decoder layer
# pair (the layers' forward and backward, and Adam and clipping over their
# parameters), with about 30% to spare.
BASE_BUDGET, LAYER_BUDGET = 500, 2_250


def tiny_model(layers: int) -> str:
    return (
        f"{{encoder_layers: {layers}, decoder_layers: {layers}, d_model: 16, "
        "heads: 2, d_ff: 32, dropout: 0.1, share_embeddings: false, "
        "max_positions: 64}"
    )


def sentence_pairs(count: int) -> EncodedPairs:
    """Pairs of 3 to 12 ids a side, as short sentences are."""
    rng = np.random.default_rng(0)
    return EncodedPairs.from_examples(
        [
            Example(
                rng.integers(4, VOCAB, rng.integers(3, 13)).tolist(),
                rng.integers(4, VOCAB, rng.integers(3, 13)).tolist(),
            )
            for _ in range(count)
        ]
    )


def operators_of_one_update(tmp_path, layers: int, rows: int) -> Counter[str]:
    """ATen operators (nested ones included) of the trainer's second update,
    a batch of ``rows`` pairs, under training's process settings."""
    tmp_path.mkdir(exist_ok=True)
    config, _ = toy_config(tmp_path, "train.threads=1", model=tiny_model(layers))
    with process_settings_kept():
        configure_torch(config)
        data = PreparedData(None, sentence_pairs(2 * rows), [], [])  # type: ignore[arg-type]
        model = build_model(config.model, VOCAB, VOCAB)
        inference = family_of(config.model).inference
        task = TranslationTask(config, model, data, CPU, inference)
        trainer = Trainer(config, tmp_path / "run", model, task, CPU)
        # the first update also makes Adam's state: it is not counted
        assert trainer.train_step([np.arange(rows, 2 * rows)]) is not None
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            assert trainer.train_step([np.arange(rows)]) is not None
    return Counter(e.name for e in prof.events() if e.name.startswith("aten::"))


@pytest.mark.parametrize("layers", [2, 6])
def test_an_update_stays_within_its_operator_budget_per_layer(tmp_path, layers):
    counts = operators_of_one_update(tmp_path, layers, rows=512)
    budget = BASE_BUDGET + LAYER_BUDGET * layers
    assert sum(counts.values()) <= budget, counts.most_common(10)


def test_more_sentences_in_a_batch_add_no_operators(tmp_path):
    fewer = operators_of_one_update(tmp_path / "fewer", 2, rows=128)
    more = operators_of_one_update(tmp_path / "more", 2, rows=1024)
    grown = sum(more.values()) - sum(fewer.values())
    # a loop over the rows would add at least one operator for each of 896
    assert abs(grown) <= 0.01 * sum(fewer.values()), (more - fewer).most_common(5)
