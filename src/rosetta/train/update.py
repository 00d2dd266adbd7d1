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
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.nn.parallel import DistributedDataParallel

from rosetta.config.sections import TrainConfig
from rosetta.runtime.compiled import (
    CompiledOrEager,
    cannot_compile,
    compile_wanted,
    configure_compiler,
    use_cache_folder,
)
from rosetta.runtime.precision import autocast, check_precision
from rosetta.train.distributed import Group

# (the forward module: the model or its DDP wrapper, a batch) -> summed loss
LossSum = Callable[[torch.nn.Module, Any], torch.Tensor]
# Adam's settings that say how a process runs it, not what it computes
RUN_KEYS = ("fused", "foreach", "capturable")
COMPILED_ADAM = {"fused": None, "foreach": True, "capturable": True}


def make_adam(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Adam:
    """Adam, fused into one kernel per step where this PyTorch supports it
    (a compiled update runs it otherwise: ``Updater.settle_optimizer``)."""
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
        warn: where compiling (``train.compile``) says what it does, and
            a compile that fails says so.

    The host reads the device once per update: the loss and the gradient
    norm together, after backward (and once more with fp16, whose loss scale
    must not see a skipped step's gradients).
    """

    def __init__(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        cfg: TrainConfig,
        device: torch.device,
        group: Group,
        loss_sum: LossSum,
        warn: Callable[[str], None] = print,
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
        self.batch_loss: Callable[..., torch.Tensor] = loss_sum
        self.clip: Callable[[], torch.Tensor] = self._clip
        self.adam_step: Callable[[], Any] = self.optimizer.step
        # the settings Adam was made with run it eagerly (fused where it can)
        self.eager_adam = {key: optimizer.param_groups[0][key] for key in RUN_KEYS}
        self.compiled = self.adam_compiled = False
        self.rate = cfg.lr
        self.warn = warn
        self.settle_optimizer()

    def compile_if_wanted(self, family_compiles: bool = True) -> None:
        """The loss (forward, loss, backward: one graph, any batch shape),
        clipping and Adam's step compiled, where ``train.compile`` asks
        (``auto``: on a GPU, for a family whose update compiles)."""
        if not compile_wanted(self.cfg.compile, self.device, family_compiles):
            return
        warn = self.warn
        self.compiled = True
        reason = cannot_compile(self.device)
        if reason is not None:
            warn(f"warning: training is not compiled ({reason}); it runs eagerly")
            self.compiled = False
            return
        warn(f"compiling the update (kept for the next time in {use_cache_folder()})")
        configure_compiler()
        self.batch_loss = CompiledOrEager(
            self.batch_loss,
            "the training forward pass and loss",
            warn,
            dynamic=True,
            fullgraph=True,
        )
        # compiled, the norm of all gradients as one vector: one fused
        # reduction, where clip_grad_norm_'s per-tensor norms stay one call each
        self.clip = CompiledOrEager(self._clip_flat, "gradient clipping", warn)
        self.adam_step = CompiledOrEager(
            self.adam_step, "Adam's step", warn, fallback=self._adam_eagerly
        )
        self.adam_compiled = True
        self.settle_optimizer()

    def _adam_eagerly(self) -> None:
        self.adam_compiled = False
        self.settle_optimizer()

    def settle_optimizer(self) -> None:
        """Give Adam the settings of the way this process steps it, which a
        checkpoint written by another may have replaced: compiled, its
        multi-tensor form traced by the compiler (``capturable``) and the
        learning rate a tensor (a float is a constant of the graph: a
        recompile per rate); eagerly, the settings it was made with and a
        float."""
        for param_group in self.optimizer.param_groups:
            lr = float(param_group["lr"])
            if self.adam_compiled:  # beside the weights: no copy in the step
                at = param_group["params"][0].device
                param_group.update(COMPILED_ADAM, lr=torch.tensor(lr, device=at))
            else:
                param_group.update(self.eager_adam, lr=lr)

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
        summed: list[torch.Tensor] = []
        for index, (batch, count) in enumerate(share):
            exchange = index == len(share) - 1  # gradients cross processes once
            with self._gradient_exchange(exchange):
                with autocast(self.device, self.cfg.precision):
                    batch_loss = self.batch_loss(self.forward, batch)
                weighted = batch_loss / per_process if count else batch_loss * 0.0
                if self.scaler is not None:
                    weighted = self.scaler.scale(weighted)
                weighted.backward()
            if count:
                summed.append(batch_loss.detach().float())
        loss_sum = torch.stack(summed).sum() if summed else torch.zeros(())
        loss_sum = self.group.sum_tensor(loss_sum.to(self.device))
        if self.scaler is not None:  # its state must not see a skipped loss
            loss = loss_sum.item() / tokens
            if not math.isfinite(loss):
                self.optimizer.zero_grad(set_to_none=True)
                return loss, int(tokens), "loss"
            self.scaler.unscale_(self.optimizer)
        norm = self.clip()
        # the one read of the device per update: the loss and the norm
        loss_total, norm_value = torch.stack([loss_sum, norm.float()]).tolist()
        loss = loss_total / tokens
        if not math.isfinite(loss):
            self.optimizer.zero_grad(set_to_none=True)
            return loss, int(tokens), "loss"
        self.set_learning_rate(lr)
        if self.scaler is not None:  # it skips the step if gradients overflowed
            scale = self.scaler.get_scale()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            overflowed = self.scaler.get_scale() < scale
            return loss, int(tokens), "overflow" if overflowed else None
        if not math.isfinite(norm_value):
            self.optimizer.zero_grad(set_to_none=True)
            return loss, int(tokens), "gradient norm"
        self.adam_step()
        return loss, int(tokens), None

    def _clip(self) -> torch.Tensor:
        """The gradients' norm (0 without ``clip_norm``), the gradients
        scaled down to ``clip_norm`` if it is larger."""
        if self.cfg.clip_norm is None:
            return torch.zeros((), device=self.device)
        return torch.nn.utils.clip_grad_norm_(
            self.model.parameters(), self.cfg.clip_norm
        )

    def _clip_flat(self) -> torch.Tensor:
        """``_clip`` as one vector: the norm of every gradient concatenated,
        then each scaled by ``min(1, clip_norm / (norm + 1e-6))``, as
        ``clip_grad_norm_`` scales them."""
        if self.cfg.clip_norm is None:
            return torch.zeros((), device=self.device)
        grads = [p.grad for p in self.model.parameters() if p.grad is not None]
        flat = torch.cat([g.detach().reshape(-1).float() for g in grads])
        norm = torch.linalg.vector_norm(flat)
        scale = (self.cfg.clip_norm / (norm + 1e-6)).clamp(max=1.0)
        torch._foreach_mul_(grads, scale)
        return norm

    @contextlib.contextmanager
    def as_made(self) -> Iterator[None]:
        """Adam's settings as it was made (eager, a float rate) while a
        checkpoint is written, so that every checkpoint reads alike whatever
        wrote it; then those of this process's way again."""
        kept = [dict(param_group) for param_group in self.optimizer.param_groups]
        for param_group in self.optimizer.param_groups:
            param_group.update(self.eager_adam, lr=float(param_group["lr"]))
        try:
            yield
        finally:
            for param_group, settings in zip(
                self.optimizer.param_groups, kept, strict=True
            ):
                param_group.update(settings)

    def set_learning_rate(self, lr: float) -> None:
        """Into Adam's settings: a float, or the tensor filled anew."""
        self.rate = lr
        for param_group in self.optimizer.param_groups:
            if isinstance(param_group["lr"], torch.Tensor):
                param_group["lr"].fill_(lr)
            else:
                param_group["lr"] = lr

    @property
    def learning_rate(self) -> float:
        """The rate of the last update (read without the device)."""
        return self.rate

    def _gradient_exchange(self, exchange: bool) -> contextlib.AbstractContextManager:
        """DDP exchanges gradients in ``backward`` unless told not to."""
        if exchange or not isinstance(self.forward, DistributedDataParallel):
            return contextlib.nullcontext()
        return self.forward.no_sync()
