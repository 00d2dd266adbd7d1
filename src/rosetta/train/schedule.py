"""Learning-rate warm-up then decay."""

from __future__ import annotations

import math

from rosetta.config.sections import TO_A_FLOOR, TrainConfig


def learning_rate(
    step: int,
    peak: float,
    warmup: int,
    decay: str = "inverse_sqrt",
    total: int | None = None,
    floor: float = 0.0,
) -> float:
    """The rate for ``step`` (counted from 1).

    Warm-up: step i of the first n uses ``i * p / n``, reaching the peak p at
    step n. Then ``inverse_sqrt`` decays as ``p * sqrt(n / i)`` (the Transformer
    paper's schedule), ``constant`` stays at p, and ``cosine`` and ``linear``
    go from p down to ``floor`` f at step ``total``, the run's last, along
    the share t = (i − n) / (total − n) of the decay done:
    ``f + (p − f)(1 + cos πt) / 2`` or ``p − (p − f) t``.
    """
    if step < 1:
        raise ValueError("steps are counted from 1")
    if warmup > 0 and step <= warmup:
        return peak * step / warmup
    if decay == "inverse_sqrt":
        return peak * math.sqrt(max(warmup, 1) / step)
    if decay in TO_A_FLOOR:
        if total is None:
            raise ValueError(f"a {decay} decay needs the run's length in steps")
        done = min(1.0, (step - warmup) / max(total - warmup, 1))
        if decay == "cosine":
            return floor + (peak - floor) * (1 + math.cos(math.pi * done)) / 2
        return peak - (peak - floor) * done
    return peak


def scheduled_rate(step: int, cfg: TrainConfig) -> float:
    """``learning_rate`` at ``step`` with the training section's schedule."""
    return learning_rate(
        step, cfg.lr, cfg.warmup_steps, cfg.decay, cfg.max_steps, cfg.min_lr
    )
