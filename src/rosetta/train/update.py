"""One optimizer update: the loss of a group of batches, its gradient
accumulated over this process's share of them and exchanged across processes,
clipping, and Adam's step.

The update is that of the summed loss of every batch of the group divided by
their tokens, however the group is split among processes (``world_size``) and
accumulated batches (``update_freq``): each process divides its loss by its
share of the tokens, and ``DistributedDataParallel`` averages the gradients,
once, after the last of its batches. What a batch is and how its loss is
summed belongs to the task (``rosetta.train.translation_task``,
``rosetta.train.language_model_task``); this module only updates.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from typing import Any

import torch
from torch.nn.parallel import DistributedDataParallel

from rosetta.config.sections import TrainConfig
from rosetta.runtime.precision import autocast, check_precision
from rosetta.train.distributed import Group

# (the forward module: the model or its DDP wrapper, a batch) -> summed loss
LossSum = Callable[[torch.nn.Module, Any], torch.Tensor]


def make_adam(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Adam:
    """Adam, fused into one kernel per step where this PyTorch supports it."""
    options = dict(
        lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, weight_decay=cfg.weight_decay
    )
    try:
        return torch.optim.Adam(model.parameters(), fused=True, **options)
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.Adam(model.parameters(), foreach=True, **options)


class Updater:
    """Updates ``model`` with ``optimizer``, the loss of a batch summed by
    ``loss_sum``.

    Args:
        group: the training processes; with more than one, the model is
            wrapped in ``DistributedDataParallel`` for the forward pass.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        cfg: TrainConfig,
        device: torch.device,
        group: Group,
        loss_sum: LossSum,
    ):
        self.model, self.optimizer, self.cfg = model, optimizer, cfg
        self.device, self.group, self.loss_sum = device, group, loss_sum
        check_precision(device, cfg.precision)
        # fp16: the loss scaled up for backward, the gradients back down
        self.scaler = None
        if cfg.precision == "fp16":
            self.scaler = torch.amp.GradScaler(device.type)
        # what the training forward pass calls: the model, or its DDP wrapper
        self.forward: torch.nn.Module = model
        if group.distributed:
            ids = [device.index] if device.type == "cuda" else None
            self.forward = DistributedDataParallel(model, device_ids=ids)

    def step(
        self, share: list[tuple[Any, int]], lr: float
    ) -> tuple[float, int, str | None]:
        """Update from this process's ``share`` of a group of batches, each
        with its tokens (0: a stand-in batch that only keeps the processes in
        step), at learning rate ``lr``: (mean loss per token, tokens, None),
        or, with the weights left as they were, what was not finite
        (``"loss"``, ``"gradient norm"``, or ``"overflow"``: fp16 gradients
        too large for the loss scale, which shrinks)."""
        self.model.train()
        world_size = self.group.world_size
        tokens = self.group.sum(sum(count for _, count in share), self.device)
        per_process = tokens / world_size
        self.optimizer.zero_grad(set_to_none=True)
        loss_sum = 0.0
        for index, (batch, count) in enumerate(share):
            exchange = index == len(share) - 1  # gradients cross processes once
            with self._gradient_exchange(exchange):
                with autocast(self.device, self.cfg.precision):
                    batch_loss = self.loss_sum(self.forward, batch)
                weighted = batch_loss / per_process if count else batch_loss * 0.0
                if self.scaler is not None:
                    weighted = self.scaler.scale(weighted)
                weighted.backward()
            loss_sum += batch_loss.item() if count else 0.0
        loss = self.group.sum(loss_sum, self.device) / tokens
        if not math.isfinite(loss):
            self.optimizer.zero_grad(set_to_none=True)
            return loss, int(tokens), "loss"
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)
        norm = torch.zeros(())
        if self.cfg.clip_norm is not None:
            norm = torch.nn.utils.clip_grad_norm_(
                self.model.parameters(), self.cfg.clip_norm
            )
        for param_group in self.optimizer.param_groups:
            param_group["lr"] = lr
        if self.scaler is not None:  # it skips the step if gradients overflowed
            scale = self.scaler.get_scale()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            overflowed = self.scaler.get_scale() < scale
            return loss, int(tokens), "overflow" if overflowed else None
        if not torch.isfinite(norm):
            self.optimizer.zero_grad(set_to_none=True)
            return loss, int(tokens), "gradient norm"
        self.optimizer.step()
        return loss, int(tokens), None

    def _gradient_exchange(self, exchange: bool) -> contextlib.AbstractContextManager:
        """DDP exchanges gradients in ``backward`` unless told not to."""
        if exchange or not isinstance(self.forward, DistributedDataParallel):
            return contextlib.nullcontext()
        return self.forward.no_sync()
