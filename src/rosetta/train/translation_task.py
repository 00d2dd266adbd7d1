"""What training a translation model needs from its data: the batches of an
epoch, the label-smoothed loss of a batch, and validation (loss, perplexity
and BLEU of greedy output).

The trainer (``rosetta.train.trainer``) drives any task with these methods;
the language-model task (``rosetta.train.language_model_task``) is the other one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import torch

from rosetta.data.batching import Batch, make_batches, rank_share
from rosetta.data.vocab import PAD_ID
from rosetta.inference.text_translator import TextTranslator
from rosetta.interfaces.encoder_decoder import EncoderDecoder
from rosetta.interfaces.trained import Trained
from rosetta.runtime.precision import autocast
from rosetta.train.dense_loss import training_loss_sum
from rosetta.train.prepare import PreparedData
from rosetta.train.validation import decoded_scores, validation_loss

if TYPE_CHECKING:
    from rosetta.config.schema import Config
    from rosetta.train.training_task import TrainingSetup

# A family's inference object for a model: (Trained, precision) ->
# translator (``Family.inference``).
MakeTranslator = Callable[..., TextTranslator]


SHOWN = 3  # validation translations shown in TensorBoard


class TranslationTask:
    """Parallel sentences, batched by length, for an encoder-decoder model.

    Args:
        data: the tokenizers, the encoded training and validation pairs, and
            the validation pairs as text, for BLEU (``PreparedData``).
        translator: the family's inference object for a model
            (``Family.inference``), which validation translates with.
    """

    def __init__(
        self,
        config: Config,
        model: EncoderDecoder,
        data: PreparedData,
        device: torch.device,
        translator: MakeTranslator,
    ):
        self.config, self.cfg = config, config.train
        self.translator = translator
        self.model, self.tokenizers, self.device = model, data.tokenizers, device
        self.train_examples, self.valid_examples = data.train, data.valid
        self.valid_pairs = data.valid_pairs
        # the first validation pairs as the last validation translated them
        self.examples: list[tuple[str, str, str]] = []

    @property
    def has_validation(self) -> bool:
        return bool(self.valid_examples)

    @property
    def best_metric(self) -> str:
        """What picks the best checkpoint: BLEU when it is computed, else loss."""
        metric = self.cfg.early_stopping.metric
        decoded = {"bleu": self.cfg.valid_bleu, "exact": self.cfg.valid_exact}
        return metric if decoded.get(metric, True) else "loss"

    def epoch_batches(self, epoch: int) -> list[np.ndarray]:
        """Epoch ``epoch``'s batches (example indices) in a seeded order."""
        rng = np.random.default_rng([self.cfg.seed, epoch])
        train = self.train_examples
        return make_batches(
            train.src_lengths, train.tgt_lengths, self.cfg.batch_tokens, rng
        )

    def batches_per_update(self, world_size: int) -> int:
        """Each process takes its share of ``world_size × update_freq``."""
        return world_size * self.cfg.update_freq

    def share(
        self, group: list[np.ndarray], rank: int, world_size: int
    ) -> list[tuple[Batch, int]]:
        """This process's batches of ``group``, each with its target tokens."""
        return [
            (batch, batch.num_tgt_tokens if counts else 0)
            for indices, counts in rank_share(group, rank, world_size)
            for batch in [self.train_examples.collate(indices)]
        ]

    def loss_sum(self, forward: torch.nn.Module, batch: Batch) -> torch.Tensor:
        """The batch's summed label-smoothed loss (float32).

        The output projection runs inside the loss (``training_loss_sum``):
        eagerly a block of real target positions at a time, compiled a slice
        of the vocabulary at a time, so the (n, T, V) logits are never built.
        """
        batch = batch.to(self.device)
        features = forward(
            batch.src, batch.src_mask, batch.tgt_in, batch.tgt_in != PAD_ID
        )
        return training_loss_sum(
            features,
            self.model.output_proj,
            batch.tgt_out,
            self.cfg.label_smoothing,
            PAD_ID,
            self.cfg.batch_tokens,
        )

    def validate(self) -> dict[str, float]:
        with autocast(self.device, self.cfg.precision):
            result = validation_loss(
                self.model,
                self.valid_examples,
                self.cfg.batch_tokens,
                self.cfg.label_smoothing,
                self.device,
            )
        return result | self.decoded_scores()

    def decoded_scores(self) -> dict[str, float]:
        """BLEU and exact-sequence accuracy of the validation set decoded by
        the family's translator, as ``valid_bleu`` and ``valid_exact`` ask."""
        if not (self.cfg.valid_bleu or self.cfg.valid_exact):
            return {}
        trained = Trained(self.model, self.tokenizers, self.config, self.device)
        translator = self.translator(trained, self.cfg.precision)
        scores, hypotheses = decoded_scores(
            translator, self.valid_pairs, self.cfg.valid_bleu, self.cfg.valid_exact
        )
        self.examples = [
            (source, hypothesis, reference)
            for (source, reference), hypothesis in zip(
                self.valid_pairs[:SHOWN], hypotheses, strict=False
            )
        ]
        return scores

    def state_tensors(self) -> dict[str, torch.Tensor]:
        """Nothing but the data position is carried between updates."""
        return {}

    def load_state_tensors(self, tensors: dict[str, torch.Tensor]) -> None:
        pass


def translation_training(
    setup: TrainingSetup, translator: MakeTranslator
) -> TranslationTask:
    """The task of an encoder-decoder family: its prepared data
    (``rosetta.train.prepare.PreparedData``), validated with ``translator``."""
    config, model, data = setup.config, setup.model, setup.data
    return TranslationTask(config, model, data, setup.device, translator)
