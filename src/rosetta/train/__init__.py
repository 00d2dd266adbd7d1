"""Loss, learning-rate schedule, checkpoints and the training loop."""

from rosetta.train.loss import label_smoothed_cross_entropy
from rosetta.train.schedule import learning_rate

__all__ = ["label_smoothed_cross_entropy", "learning_rate"]
