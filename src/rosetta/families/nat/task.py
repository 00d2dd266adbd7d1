"""What training a non-autoregressive model (``model.arch: nat``) needs: the
reference fertilities of every pair, batches that carry them, the loss, and
validation.

The reference fertilities come from word alignments of the training pairs
(``rosetta.data.fertilities``). The loss of a batch is the label-smoothed
cross-entropy of the target tokens, decoded from the reference fertilities,
plus ``fertility_weight`` times the cross-entropy of those fertilities.
Validation reports both, and BLEU of translations decoded from the
predicted (argmax) fertilities, as ``rosetta translate`` would.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F

from rosetta.data.batching import Example, make_batches, pad, rank_share
from rosetta.data.fertilities import Fertilities, fits, stored_fertilities
from rosetta.data.tokenizer import TokenizerPair
from rosetta.data.vocab import EOS_ID, PAD_ID
from rosetta.errors import RosettaError
from rosetta.families.nat.config import NATConfig
from rosetta.families.nat.model import NonAutoregressiveTransformer
from rosetta.runtime.precision import autocast
from rosetta.train.loss import (
    label_smoothed_cross_entropy,
    projected_label_smoothed_cross_entropy,
)
from rosetta.train.prepare import PreparedData, PrepareOptions, prepare_data
from rosetta.train.translation_task import MakeTranslator, TranslationTask

if TYPE_CHECKING:
    from rosetta.config.schema import Config
    from rosetta.families.family import TrainingSetup


@dataclass
class FertilityBatch:
    """Padded tensors of one step, batch-first."""

    src: torch.Tensor  # (n, S) source + <eos>
    fertilities: torch.Tensor  # (n, S) 0 at <eos> and padding
    tgt: torch.Tensor  # (n, T) target, no <bos> or <eos>; T = Σ fertilities

    @property
    def num_tgt_tokens(self) -> int:
        return int((self.tgt != PAD_ID).sum())

    def to(self, device: torch.device) -> FertilityBatch:
        return FertilityBatch(*(t.to(device) for t in self.__dict__.values()))


def collate_fertilities(
    examples: list[Example], fertilities: list[list[int]]
) -> FertilityBatch:
    return FertilityBatch(
        src=pad([[*e.src, EOS_ID] for e in examples]),
        fertilities=pad([[*f, 0] for f in fertilities]),
        tgt=pad([e.tgt for e in examples]),
    )


@dataclass
class NATData:
    """A NAT run's prepared data: the pairs that fit ``max_fertility``
    (``PreparedData``) and their reference fertilities, mapped from the run
    folder."""

    pairs: PreparedData
    train_fertilities: Fertilities
    valid_fertilities: Fertilities

    @property
    def tokenizers(self) -> TokenizerPair:
        return self.pairs.tokenizers


def prepare_nat(
    config: Config,
    run_dir: Path,
    log: Callable[[str], None] = print,
    options: PrepareOptions | None = None,
) -> NATData:
    """The pairs (``prepare_data``), less those whose target is longer than
    ``max_fertility`` tokens per source token (counted), with their
    reference fertilities: aligned once, by ``rosetta prepare`` or the first
    process of a run, then stored and mapped (``stored_fertilities``)."""
    data = prepare_data(config, run_dir, log, options or PrepareOptions())
    limit = config.model.max_fertility  # type: ignore[union-attr]
    train, valid = data.train, data.valid
    kept_train = train.subset(fits(train.src_lengths, train.tgt_lengths, limit))
    kept_valid = valid.subset(fits(valid.src_lengths, valid.tgt_lengths, limit))
    dropped = len(train) - len(kept_train) + len(valid) - len(kept_valid)
    if dropped:
        log(
            f"fertilities: {dropped} pairs left out, their target longer "
            f"than {limit} (max_fertility) tokens per source token"
        )
    if not kept_train:
        raise RosettaError("no training pair fits model.max_fertility")
    # one alignment of both splits: the aligner learns from all of it
    train_fertilities, valid_fertilities = stored_fertilities(
        kept_train, kept_valid, limit, run_dir, log
    )
    kept = replace(data, train=kept_train, valid=kept_valid)
    return NATData(kept, train_fertilities, valid_fertilities)


class NATTask(TranslationTask):
    """Parallel sentences with reference fertilities, for a NAT: the
    translation task's epochs, batching and checkpoint selection, with its
    own batches, loss and validation.

    Args:
        data: the prepared pairs and fertilities (``prepare_nat``).
        translator: what validation translates with (``NATTranslator``).
    """

    def __init__(
        self,
        config: Config,
        model: NonAutoregressiveTransformer,
        data: NATData,
        device: torch.device,
        translator: MakeTranslator,
    ):
        self.model_cfg: NATConfig = config.model  # type: ignore[assignment]
        self.train_fertilities = data.train_fertilities
        self.valid_fertilities = data.valid_fertilities
        super().__init__(config, model, data.pairs, device, translator)

    def batch(self, indices: np.ndarray, train: bool = True) -> FertilityBatch:
        examples = self.train_examples if train else self.valid_examples
        fertilities = self.train_fertilities if train else self.valid_fertilities
        return collate_fertilities(
            [examples[i] for i in indices], [fertilities[i] for i in indices]
        )

    def share(
        self, group: list[np.ndarray], rank: int, world_size: int
    ) -> list[tuple[FertilityBatch, int]]:
        return [
            (batch, batch.num_tgt_tokens if counts else 0)
            for indices, counts in rank_share(group, rank, world_size)
            for batch in [self.batch(indices)]
        ]

    def losses(
        self, forward: torch.nn.Module, batch: FertilityBatch, projected: bool
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(target loss sum, its plain NLL sum, fertility NLL sum)."""
        src_mask = batch.src != PAD_ID
        features, _, fertility_logits = forward(batch.src, src_mask, batch.fertilities)
        if features.shape[:2] != batch.tgt.shape:  # the fertilities sum to T
            raise RuntimeError(
                f"decoder gave {tuple(features.shape[:2])} positions for "
                f"targets of {tuple(batch.tgt.shape)}"
            )
        if projected:
            loss, nll, _ = projected_label_smoothed_cross_entropy(
                features,
                self.model.output_proj,
                batch.tgt,
                self.cfg.label_smoothing,
                PAD_ID,
            )
        else:
            loss, nll, _ = label_smoothed_cross_entropy(
                self.model.output_proj(features),
                batch.tgt,
                self.cfg.label_smoothing,
                PAD_ID,
            )
        fertility = F.cross_entropy(
            fertility_logits[src_mask],
            batch.fertilities[src_mask].clamp(max=self.model_cfg.max_fertility),
            reduction="sum",
        )
        return loss, nll, fertility

    def loss_sum(self, forward: torch.nn.Module, batch: FertilityBatch) -> torch.Tensor:
        loss, _, fertility = self.losses(forward, batch.to(self.device), True)
        return loss + self.model_cfg.fertility_weight * fertility

    @torch.no_grad()
    def validate(self) -> dict[str, float]:
        self.model.eval()
        loss_sum = nll_sum = fertility_sum = 0.0
        tokens = 0
        with autocast(self.device, self.cfg.precision):
            valid = self.valid_examples
            lengths = valid.src_lengths, valid.tgt_lengths
            for indices in make_batches(*lengths, self.cfg.batch_tokens):
                batch = self.batch(indices, train=False).to(self.device)
                loss, nll, fertility = self.losses(self.model, batch, False)
                loss_sum += float(loss)
                nll_sum += float(nll)
                fertility_sum += float(fertility)
                tokens += batch.num_tgt_tokens
        weight = self.model_cfg.fertility_weight
        result = {
            "loss": (loss_sum + weight * fertility_sum) / tokens,
            "ppl": math.exp(min(nll_sum / tokens, 50.0)),
            "fertility_nll": fertility_sum / tokens,
        }
        return result | self.decoded_scores()


def nat_training(setup: TrainingSetup, translator: MakeTranslator) -> NATTask:
    """The NAT's task, from its prepared data (``prepare_nat``), validated
    with ``translator``."""
    return NATTask(setup.config, setup.model, setup.data, setup.device, translator)
