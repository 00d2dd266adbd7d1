"""What training a non-autoregressive model (``model.arch: nat``) needs: the
reference fertilities of every pair, batches that carry them, the loss, and
validation.

With fertilities, the reference fertilities come from word alignments of
the training pairs (``rosetta.families.nat.fertilities``). The loss of a batch is
the label-smoothed cross-entropy of the target tokens, decoded from the
reference fertilities, plus ``fertility_weight`` times the cross-entropy of
those fertilities. With CTC (``length_model: ctc``) nothing is aligned
beforehand: the loss is CTC's (``rosetta.families.nat.ctc``), and pairs
whose target does not fit the upsampled source are left out. With
``glance_ratio`` above 0 every batch takes two passes
(``rosetta.families.nat.glancing``).

Validation reports the losses, and BLEU of translations decoded as
``rosetta translate`` would (argmax fertilities, or CTC's collapse).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from rosetta.data.batching import Example, make_batches, pad, rank_share
from rosetta.data.tokenizer import TokenizerPair
from rosetta.data.vocab import EOS_ID, PAD_ID
from rosetta.errors import RosettaError
from rosetta.families.nat.config import NATConfig
from rosetta.families.nat.ctc import (
    best_alignment,
    ctc_fits,
    ctc_negative_log_likelihood,
)
from rosetta.families.nat.fertilities import Fertilities, fits, stored_fertilities
from rosetta.families.nat.glancing import glance
from rosetta.families.nat.model import Glance, NonAutoregressiveTransformer
from rosetta.runtime.precision import autocast
from rosetta.train.loss import (
    label_smoothed_cross_entropy,
    projected_label_smoothed_cross_entropy,
)
from rosetta.train.prepare import PreparedData, PrepareOptions, prepare_data
from rosetta.train.translation_task import MakeTranslator, TranslationTask

if TYPE_CHECKING:
    from rosetta.config.schema import Config
    from rosetta.train.training_task import TrainingSetup


@dataclass
class NATBatch:
    """Padded tensors of one step, batch-first."""

    src: torch.Tensor  # (n, S) source + <eos>
    fertilities: torch.Tensor | None  # (n, S) 0 at <eos> and padding; None: CTC
    tgt: torch.Tensor  # (n, T) target, no <bos> or <eos>; T = Σ fertilities

    @property
    def num_tgt_tokens(self) -> int:
        return int((self.tgt != PAD_ID).sum())

    def to(self, device: torch.device) -> NATBatch:
        fertilities = self.fertilities
        return NATBatch(
            self.src.to(device),
            None if fertilities is None else fertilities.to(device),
            self.tgt.to(device),
        )


def collate_nat(
    examples: list[Example], fertilities: list[list[int]] | None
) -> NATBatch:
    return NATBatch(
        src=pad([[*e.src, EOS_ID] for e in examples]),
        fertilities=None
        if fertilities is None
        else pad([[*f, 0] for f in fertilities]),
        tgt=pad([e.tgt for e in examples]),
    )


@dataclass
class NATData:
    """A NAT run's prepared data: the pairs its length model can produce
    (``PreparedData``) and, with fertilities, their reference fertilities,
    mapped from the run folder."""

    pairs: PreparedData
    train_fertilities: Fertilities | None
    valid_fertilities: Fertilities | None

    @property
    def tokenizers(self) -> TokenizerPair:
        return self.pairs.tokenizers


def prepare_nat(
    config: Config,
    run_dir: Path,
    log: Callable[[str], None] = print,
    options: PrepareOptions | None = None,
) -> NATData:
    """The pairs (``prepare_data``), less those (counted) whose target is
    longer than ``max_fertility`` tokens per source token, or, with CTC,
    does not fit ``upsample`` positions per source token (``ctc_fits``).
    With fertilities, their reference fertilities too: aligned once, by
    ``rosetta prepare`` or the first process of a run, then stored and
    mapped (``stored_fertilities``)."""
    data = prepare_data(config, run_dir, log, options or PrepareOptions())
    model: NATConfig = config.model  # type: ignore[assignment]
    limit = model.max_fertility
    train, valid = data.train, data.valid
    if model.length_model == "ctc":
        setting, what = "upsample", f"{model.upsample} positions per source token"
        kept_train = train.subset(ctc_fits(train, model.upsample))
        kept_valid = valid.subset(ctc_fits(valid, model.upsample))
    else:
        setting, what = "max_fertility", f"{limit} tokens per source token"
        kept_train = train.subset(fits(train.src_lengths, train.tgt_lengths, limit))
        kept_valid = valid.subset(fits(valid.src_lengths, valid.tgt_lengths, limit))
    dropped = len(train) - len(kept_train) + len(valid) - len(kept_valid)
    if dropped:
        log(
            f"{dropped} pairs left out: their target needs more than {what} ({setting})"
        )
    if not kept_train:
        raise RosettaError(f"no training pair fits model.{setting}")
    kept = replace(data, train=kept_train, valid=kept_valid)
    if model.length_model == "ctc":
        return NATData(kept, None, None)
    # one alignment of both splits: the aligner learns from all of it
    train_fertilities, valid_fertilities = stored_fertilities(
        kept_train, kept_valid, limit, run_dir, log
    )
    return NATData(kept, train_fertilities, valid_fertilities)


class Losses(NamedTuple):
    """One batch's sums: the target loss and its plain NLL (equal for CTC),
    the fertility NLL, and how many of its source tokens got the reference
    fertility as their most likely one."""

    target: torch.Tensor
    nll: torch.Tensor
    fertility: torch.Tensor | float = 0.0
    fertility_hits: torch.Tensor | int = 0
    source_tokens: int = 0


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
        self.model: NonAutoregressiveTransformer = model
        self.train_fertilities = data.train_fertilities
        self.valid_fertilities = data.valid_fertilities
        # updates begun, for the glancing ratio's annealing; carried in checkpoints
        self.updates = 0
        self.ratio = self.model_cfg.glance_ratio_at(0)
        super().__init__(config, model, data.pairs, device, translator)

    def batch(self, indices: np.ndarray, train: bool = True) -> NATBatch:
        examples = self.train_examples if train else self.valid_examples
        fertilities = self.train_fertilities if train else self.valid_fertilities
        return collate_nat(
            [examples[i] for i in indices],
            None if fertilities is None else [fertilities[i] for i in indices],
        )

    def share(
        self, group: list[np.ndarray], rank: int, world_size: int
    ) -> list[tuple[NATBatch, int]]:
        """This process's batches of the next update; that update glances at
        the ratio its number gives."""
        self.ratio = self.model_cfg.glance_ratio_at(self.updates)
        self.updates += 1
        return [
            (batch, batch.num_tgt_tokens if counts else 0)
            for indices, counts in rank_share(group, rank, world_size)
            for batch in [self.batch(indices)]
        ]

    def state_tensors(self) -> dict[str, torch.Tensor]:
        return {"updates": torch.tensor(self.updates)}

    def load_state_tensors(self, tensors: dict[str, torch.Tensor]) -> None:
        updates = tensors.get("updates", torch.tensor(0))
        if updates.numel() != 1:
            raise ValueError(f"updates holds {updates.numel()} numbers, not a count")
        count = updates.item()
        if not (0 <= count < 2**62 and count == int(count)):  # NaN fails too
            raise ValueError(f"updates {count!r} is not a count")
        self.updates = int(count)

    @torch.no_grad()
    def glance(self, batch: NATBatch, src_mask: torch.Tensor, ratio: float) -> Glance:
        """The first pass of glancing training: what the second one sees."""
        features, tgt_mask, _ = self.model(batch.src, src_mask, batch.fertilities)
        logits = self.model.output_proj(features).float()
        reference = batch.tgt
        if self.model.uses_ctc:
            reference = best_alignment(logits.log_softmax(-1), tgt_mask, batch.tgt)
        return glance(logits.argmax(-1), reference, tgt_mask, ratio)

    def losses(
        self,
        forward: torch.nn.Module,
        batch: NATBatch,
        projected: bool,
        ratio: float = 0.0,
    ) -> Losses:
        """The batch's losses (``Losses``), glancing at ``ratio`` (module
        docstring)."""
        src_mask = batch.src != PAD_ID
        seen = self.glance(batch, src_mask, ratio) if ratio > 0 else None
        features, tgt_mask, fertility_logits = forward(
            batch.src, src_mask, batch.fertilities, seen
        )
        if self.model.uses_ctc:
            log_probs = self.model.output_proj(features).float().log_softmax(-1)
            nll = ctc_negative_log_likelihood(log_probs, tgt_mask, batch.tgt)
            return Losses(nll, nll)
        assert fertility_logits is not None and batch.fertilities is not None
        targets = batch.tgt  # the revealed tokens are not predicted
        if seen is not None:
            targets = targets.masked_fill(seen.revealed, PAD_ID)
        if features.shape[:2] != batch.tgt.shape:  # the fertilities sum to T
            raise RuntimeError(
                f"decoder gave {tuple(features.shape[:2])} positions for "
                f"targets of {tuple(batch.tgt.shape)}"
            )
        if projected:
            loss, nll, _ = projected_label_smoothed_cross_entropy(
                features,
                self.model.output_proj,
                targets,
                self.cfg.label_smoothing,
                PAD_ID,
            )
        else:
            loss, nll, _ = label_smoothed_cross_entropy(
                self.model.output_proj(features),
                targets,
                self.cfg.label_smoothing,
                PAD_ID,
            )
        reference = batch.fertilities[src_mask].clamp(max=self.model_cfg.max_fertility)
        fertility_logits = fertility_logits[src_mask]
        fertility = F.cross_entropy(fertility_logits, reference, reduction="sum")
        hits = (fertility_logits.argmax(-1) == reference).sum()  # no sync here
        return Losses(loss, nll, fertility, hits, len(reference))

    def loss_sum(self, forward: torch.nn.Module, batch: NATBatch) -> torch.Tensor:
        batch = batch.to(self.device)
        losses = self.losses(forward, batch, True, self.ratio)
        return losses.target + self.model_cfg.fertility_weight * losses.fertility

    @torch.no_grad()
    def validate(self) -> dict[str, float]:
        """The losses per target token, and with fertilities the share of
        source tokens whose most likely fertility is the reference one
        (``fertility_accuracy``: it tells a fertility predictor that grows
        too sure of itself, whose NLL rises, from one that grows wrong)."""
        self.model.eval()
        loss_sum = nll_sum = fertility_sum = 0.0
        tokens = hits = sources = 0
        with autocast(self.device, self.cfg.precision):
            valid = self.valid_examples
            lengths = valid.src_lengths, valid.tgt_lengths
            for indices in make_batches(*lengths, self.cfg.batch_tokens):
                batch = self.batch(indices, train=False).to(self.device)
                losses = self.losses(self.model, batch, False)
                loss_sum += float(losses.target)
                nll_sum += float(losses.nll)
                fertility_sum += float(losses.fertility)
                hits += int(losses.fertility_hits)
                sources += losses.source_tokens
                tokens += batch.num_tgt_tokens
        weight = self.model_cfg.fertility_weight
        result = {
            "loss": (loss_sum + weight * fertility_sum) / tokens,
            "ppl": math.exp(min(nll_sum / tokens, 50.0)),
        }
        if not self.model.uses_ctc:
            result["fertility_nll"] = fertility_sum / tokens
            result["fertility_accuracy"] = hits / sources
        return result | self.decoded_scores()


def nat_training(setup: TrainingSetup, translator: MakeTranslator) -> NATTask:
    """The NAT's task, from its prepared data (``prepare_nat``), validated
    with ``translator``."""
    return NATTask(setup.config, setup.model, setup.data, setup.device, translator)
