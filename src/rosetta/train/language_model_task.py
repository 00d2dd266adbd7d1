"""What training a language model on one long text needs: the text laid out
as parallel streams read segment after segment, the memory carried from each
segment to the next, and validation by loss, perplexity and bits per
character.

Epoch ``e`` cuts the text into ``batch_tokens // segment_length`` streams
starting at a seeded offset below ``segment_length``, so every epoch sees
the segments' boundaries at other places. The memory is part of the
training state: a checkpoint holds it (``state_tensors``), so resuming
continues with the memory an uninterrupted run would have had.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import torch

from rosetta.config.language_model_section import LanguageModelSection
from rosetta.data.text import TokenStreams
from rosetta.data.tokenizer import CharacterTokenizer
from rosetta.data.vocab import PAD_ID
from rosetta.errors import RosettaError
from rosetta.inference.text_scoring import score_text
from rosetta.interfaces.language_model import Memory, SegmentLanguageModel
from rosetta.runtime.precision import autocast
from rosetta.train.dense_loss import training_loss_sum
from rosetta.train.prepare import PreparedText

if TYPE_CHECKING:
    from rosetta.config.schema import Config
    from rosetta.train.training_task import TrainingSetup


class Segment(NamedTuple):
    index: int  # in the epoch
    inputs: torch.Tensor  # (n, L) this process's streams
    labels: torch.Tensor  # (n, L) the next tokens


class LanguageModelTask:
    """Consecutive segments of ``train`` for a language model
    (``rosetta.interfaces.language_model``).

    Args:
        data: the tokenizer and the token ids of the training and validation
            texts (``PreparedText``).
        rank, world_size: this process and how many train; each reads its
            own streams and keeps its own memory.
    """

    def __init__(
        self,
        config: Config,
        model: SegmentLanguageModel,
        data: PreparedText,
        device: torch.device,
        rank: int = 0,
        world_size: int = 1,
    ):
        self.config, self.cfg = config, config.train
        self.lm: LanguageModelSection = config.model  # type: ignore[assignment]
        self.model, self.tokenizers, self.device = model, data.tokenizers, device
        train = data.train
        self.train_ids, self.valid_ids = train, data.valid
        self.rank = rank
        self.streams_per_process = max(
            1, self.cfg.batch_tokens // self.lm.segment_length // world_size
        )
        self.streams = self.streams_per_process * world_size
        if len(train) < 2 * self.streams * self.lm.segment_length:
            raise RosettaError(
                f"the training text has {len(train):,} tokens: too few for "
                f"{self.streams} streams of at least two segments of "
                f"{self.lm.segment_length}; lower train.batch_tokens or "
                "model.segment_length"
            )
        self.rows: np.ndarray | None = None  # (n, T) this epoch's streams
        self.memory: Memory | None = None
        self.memory_after = -1  # the segment whose forward pass left it
        self.examples: list[tuple[str, str, str]] = []  # a text, not pairs

    @property
    def has_validation(self) -> bool:
        return len(self.valid_ids) > 1

    @property
    def best_metric(self) -> str:
        return "loss"

    def epoch_batches(self, epoch: int) -> list[list[int]]:
        """Lay epoch ``epoch``'s streams out; its batches are the segment
        indices, in order (the memory needs them consecutive)."""
        rng = np.random.default_rng([self.cfg.seed, epoch])
        offset = int(rng.integers(self.lm.segment_length))
        layout = TokenStreams.of(self.train_ids[offset:], self.streams)
        mine = slice(
            self.rank * self.streams_per_process,
            (self.rank + 1) * self.streams_per_process,
        )
        self.rows = layout.rows[mine]
        segments = TokenStreams(self.rows).segments(self.lm.segment_length)
        return [[index] for index in range(segments)]

    def batches_per_update(self, world_size: int) -> int:
        """Every process reads the same segments of its own streams."""
        return self.cfg.update_freq

    def share(
        self, group: list[list[int]], rank: int, world_size: int
    ) -> list[tuple[Segment, int]]:
        assert self.rows is not None, "epoch_batches lays the streams out first"
        share = []
        for (index,) in group:
            inputs, labels = TokenStreams(self.rows).segment(
                index, self.lm.segment_length
            )
            share.append((Segment(index, inputs, labels), labels.numel()))
        return share

    def loss_sum(self, forward: torch.nn.Module, segment: Segment) -> torch.Tensor:
        """The segment's summed label-smoothed loss, read with the memory
        the previous segment left (none at an epoch's first)."""
        memory = self.memory if self.memory_after == segment.index - 1 else None
        inputs = segment.inputs.to(self.device)
        features, self.memory = forward(inputs, memory, self.lm.memory_length)
        self.memory_after = segment.index
        return training_loss_sum(
            features,
            self.model.output_proj,
            segment.labels.to(self.device),
            self.cfg.label_smoothing,
            PAD_ID,
            self.cfg.batch_tokens,
        )

    def validate(self) -> dict[str, float]:
        """Loss (nats per token), perplexity and, for characters, bits per
        character of the validation text, read in ``eval_streams`` rows (the
        score of reading it in order)."""
        with autocast(self.device, self.cfg.precision):
            score = score_text(
                self.model,
                self.valid_ids,
                self.lm.segment_length,
                self.lm.scoring_memory,
                self.device,
                streams=self.lm.eval_streams,
                progress=True,
            )
        result = {"loss": score.loss, "ppl": score.perplexity}
        if isinstance(self.tokenizers.tgt, CharacterTokenizer):
            result["bpc"] = score.bits_per_token
        return result

    def state_tensors(self) -> dict[str, torch.Tensor]:
        """The memory and the segment that left it."""
        tensors = {"memory_after": torch.tensor([self.memory_after])}
        for layer, states in enumerate(self.memory or []):
            tensors[f"memory.{layer}"] = states
        return tensors

    def load_state_tensors(self, tensors: dict[str, torch.Tensor]) -> None:
        """The memory ``state_tensors`` saved; ``ValueError`` for one that
        does not fit this model and its streams (it would fail a step later,
        or attend to what no run left)."""
        after = tensors.get("memory_after", torch.tensor([-1]))
        found = {k: v for k, v in tensors.items() if k.startswith("memory.")}
        names = [f"memory.{layer}" for layer in range(len(self.model.layers))]
        if after.numel() != 1 or sorted(found) not in ([], sorted(names)):
            raise ValueError("not a memory of this model")
        rows, width = self.streams_per_process, self.model.d_model
        for name, states in found.items():  # (streams, remembered, d_model)
            shape = tuple(states.shape)
            fits = len(shape) == 3 and (shape[0], shape[2]) == (rows, width)
            fits = fits and shape[1] <= self.lm.memory_length
            if not (fits and states.is_floating_point()):
                raise ValueError(f"{name} is {states.dtype} {shape}, not this memory")
            if not bool(states.isfinite().all()):
                raise ValueError(f"{name} holds NaN or infinite values")
        self.memory_after = int(after.reshape(-1)[0])
        self.memory = None
        if found:
            dtype = self.model.output_proj.weight.dtype  # what the layers hold
            self.memory = [found[name].to(self.device, dtype) for name in names]


def lm_training(setup: TrainingSetup, scorer: Callable[..., Any]) -> LanguageModelTask:
    """The language model's task, from its prepared text (``PreparedText``);
    it validates by its own scoring, not through ``scorer``."""
    config, model, data = setup.config, setup.model, setup.data
    return LanguageModelTask(
        config, model, data, setup.device, setup.rank, setup.world_size
    )
