"""Decoding with a compiled step, as an explicit transform: ``compile_for_decoding``.

A decoding step of a Transformer is a few hundred small operations on a
few dozen rows. Eager PyTorch launches each from Python, so on a GPU the
step waits on the host, not on the chip. Here the step (embedding, every
layer, the final norm, the output projection and the log-softmax) is one
function compiled by ``torch.compile``; on a GPU it is compiled with
``mode="reduce-overhead"``, which records it as a CUDA graph and replays
the recording at every step.

Both need a step whose shapes do not change from one step to the next: the
keys and values live in fixed slots (``rosetta.families.transformer.fast.slots``)
and the position is a tensor. A batch of another size, a longer source or
a full buffer is a new shape: compiled once more (with dynamic sizes from
the second on), or recorded once more on a GPU, then reused.

The search itself is unchanged: it calls ``step`` and ``reorder`` as with
any model. What a compiled step cannot give falls back to the layers for the
rest of the sentence batch: attention weights (``--alignment``) and a
prefix fed in one pass (then the slots take the positions over). A compile
that cannot happen is one warning line; the step then runs eagerly.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from dataclasses import replace

import torch
import torch.nn.functional as F
from torch import nn

from rosetta.errors import RosettaError
from rosetta.families.transformer.fast.packed import pack_for_inference
from rosetta.families.transformer.fast.slots import SlotCache, SlotState
from rosetta.families.transformer.kv_cache import KeyValue
from rosetta.families.transformer.model import TransformerDecoder
from rosetta.families.transformer.state import TransformerState
from rosetta.interfaces.encoder_decoder import DecoderState, EncoderDecoder
from rosetta.nn.attention import MultiHeadAttention
from rosetta.nn.relative_attention import RelativeMultiHeadAttention
from rosetta.runtime.compiled import (
    CompiledOrEager,
    cannot_compile,
    checked_setting,
    compile_wanted,
    configure_compiler,
)


def slot_step(
    decoder: TransformerDecoder,
    output_proj: nn.Module,
    tokens: torch.Tensor,
    position: torch.Tensor,
    slots: torch.Tensor,
    memory_kv: list[KeyValue],
    src_mask: torch.Tensor,
) -> torch.Tensor:
    """The tokens (rows,) at ``position`` (0-d) through the decoder:
    log-probabilities (rows, V). Their keys and values are written into slot
    ``position`` of ``slots``; every layer attends over the slots up to it."""
    capacity = slots.size(4)
    group = tokens.size(0) // src_mask.size(0)
    slot = torch.arange(capacity, device=tokens.device)
    visible = (slot <= position).view(1, 1, 1, capacity)
    distance = position - slot  # relative attention's, to every slot
    cache = SlotCache(slots, position)
    x = decoder.embedding.at(tokens, position)  # (rows, 1, d)
    for index, layer in enumerate(decoder.layers):
        x, _, _ = layer(
            x,
            memory_kv[index],
            src_mask,
            visible,
            cache,  # type: ignore[arg-type]  # stores as a KeyValueCache does
            index,
            group=group,
            distance=distance,
        )
    logits = output_proj(decoder.final_norm(x)[:, 0])
    return torch.log_softmax(logits.float(), dim=-1)


class CompiledDecoding(EncoderDecoder):
    """A Transformer whose decoding steps run ``slot_step`` compiled.

    Args:
        model: the model whose encoder, decoder and projection compute here;
            ``compile_for_decoding`` gives a copy nobody else holds.
        step: ``slot_step``, compiled (a ``CompiledOrEager``), or as it is.
    """

    def __init__(self, model: EncoderDecoder, step: Callable[..., torch.Tensor]):
        super().__init__(model.encoder, model.decoder, model.output_proj)
        self.compiled_step = step

    def init_state(self, memory: torch.Tensor, src_mask: torch.Tensor) -> SlotState:
        state = self.decoder.init_state(memory, src_mask)
        return SlotState.of(state, state.memory_kv[0][0].dtype)

    def step(
        self,
        prev_tokens: torch.Tensor,
        state: DecoderState,
        need_attention: bool = False,
    ) -> tuple[torch.Tensor, DecoderState]:
        """A compiled step; with attention weights, or on from a state the
        layers made, the layers' step."""
        if need_attention or not isinstance(state, SlotState):
            eager = state.eager() if isinstance(state, SlotState) else state
            return super().step(prev_tokens, eager, need_attention)
        table = self.decoder.embedding.positions.size(0)
        if state.length >= table:  # what the embedding says eagerly
            raise ValueError(
                f"sequence of {state.length + 1} tokens exceeds max_positions ({table})"
            )
        state = state.with_room()
        tokens = F.pad(prev_tokens, (0, state.slots.size(2) - state.rows))
        position = torch.tensor(state.length, device=prev_tokens.device)
        log_probs = self.compiled_step(
            self.decoder,
            self.output_proj,
            tokens,
            position,
            state.slots,
            state.memory_kv,
            state.src_mask,
        )
        # a copy: a CUDA graph's output is overwritten by its next replay
        return log_probs[: state.rows].clone(), replace(state, length=state.length + 1)

    def steps(
        self, tokens: torch.Tensor, state: DecoderState, first: int = 0
    ) -> tuple[torch.Tensor, DecoderState]:
        """A prefix through the layers in one pass; the steps after it are
        compiled ones again."""
        eager = state.eager() if isinstance(state, SlotState) else state
        log_probs, after = super().steps(tokens, eager, first)
        assert isinstance(after, TransformerState)
        dtype = after.memory_kv[0][0].dtype
        return log_probs, SlotState.of(after, dtype)


def can_compile_decoding(model: EncoderDecoder) -> bool:
    """A Transformer decoder counting positions 0, 1, 2, ... (absolute or
    relative): its position scheme's steps are at their count, without
    distance penalties or positions inside numbers."""
    decoder = model.decoder
    if not isinstance(decoder, TransformerDecoder):
        return False
    if not decoder.positions.steps_by_count:
        return False
    attentions = (MultiHeadAttention, RelativeMultiHeadAttention)
    return all(type(layer.self_attn) in attentions for layer in decoder.layers)


def warn_on_stderr(line: str) -> None:
    print(line, file=sys.stderr)


def compiles_decoding(
    device: torch.device, precision: str, compiled: object = "auto"
) -> bool:
    """Whether a translator on ``device`` decodes with a compiled step:
    ``compiled`` True, or ``"auto"`` on a GPU; not int8 (its layers are
    their own fast path), and not where the compiler cannot run here (said
    in one line)."""
    setting = checked_setting(compiled)
    if precision == "int8":
        if setting is True:
            raise RosettaError(
                "int8 decodes on its own layers: compile with fp32 or bf16"
            )
        return False
    if not compile_wanted(setting, device):
        return False
    if reason := cannot_compile(device):
        warn_on_stderr(f"warning: decoding is not compiled ({reason}); it runs eagerly")
        return False
    return True


@torch.no_grad()
def compile_for_decoding(
    model: EncoderDecoder, dtype: torch.dtype | None = None
) -> EncoderDecoder:
    """A copy of ``model`` in eval mode whose decoding steps are compiled
    (``CompiledDecoding``). A model whose positions a compiled step does not
    count (``can_compile_decoding``) decodes on the packed fast path instead,
    said in one line. ``dtype``: the packed path's (``pack_for_inference``);
    a compiled step computes under whatever autocast the search runs in."""
    if not can_compile_decoding(model):
        warn_on_stderr(
            "warning: the decoding step of distance penalties (alibi) or "
            "positions inside numbers is not compiled; it runs eagerly"
        )
        return pack_for_inference(model, dtype)
    copied = copy.deepcopy(model).eval().requires_grad_(False)
    device = next(copied.parameters()).device
    configure_compiler()
    # dynamic sizes from the first compile: batches of other sizes and
    # lengths reuse the graph (a GPU records one CUDA graph per shape)
    options: dict = {"fullgraph": True, "dynamic": True}
    if device.type == "cuda":
        options["mode"] = "reduce-overhead"  # CUDA graphs
    step = CompiledOrEager(slot_step, "the decoding step", warn_on_stderr, **options)
    return CompiledDecoding(copied, step).eval()
