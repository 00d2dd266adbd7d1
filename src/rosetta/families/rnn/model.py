"""Recurrent encoder-decoders, with and without Bahdanau attention.

Encoder: embedding, then a deep, optionally bidirectional GRU/LSTM/RNN. Its
memory is every position's top-layer state and the final state of every layer.

Decoder without attention: initialised from the encoder's final state (through
a bridge when the shapes differ); at every step its input is the previous
token's embedding concatenated with the context ``c = h_T`` (the encoder's
top-layer final state, both directions).

Decoder with attention: the context is recomputed at every step,
``c_i = Σ_j α_ij h_j`` with ``α_ij = softmax_j(v^T tanh(W s_{i-1} + U h_j))``
over the real source tokens, where ``s_{i-1}`` is the decoder's top-layer state
before the step.

Both predict from ``[s_i; c_i; e(y_{i-1})]`` through a tanh readout layer of the
embedding width, then the output projection (tied to the target embedding when
asked): the "deep output" of Bahdanau et al., which lets the context and the
previous token reach the prediction directly.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch import nn

from rosetta.interfaces.encoder_decoder import Decoder, Encoder, EncoderDecoder
from rosetta.nn import RNN, AdditiveAttention
from rosetta.nn.dropout import Dropout
from rosetta.nn.recurrent import CellKind, Impl, RecurrentState

GRU_VARIANTS = ("cho", "torch")


@dataclass
class EncoderOutput:
    """What a recurrent encoder hands its decoder."""

    outputs: torch.Tensor  # (n, S, D*H) top-layer states, zero at padding
    final: RecurrentState  # (L*D, n, H), or (h, c) for the LSTM


def top_layer(final: RecurrentState, directions: int) -> torch.Tensor:
    """The top layer's final h, directions concatenated: (n, D*H)."""
    h = final[0] if isinstance(final, tuple) else final
    return torch.cat(list(h[-directions:]), dim=-1)


class Bridge(nn.Module):
    """Encoder final states -> decoder initial states.

    Layer ``l`` of the decoder starts from layer ``l`` of the encoder when both
    have as many layers, otherwise every decoder layer starts from the top
    encoder layer. The directions are concatenated and mapped to the decoder's
    width by ``tanh(W h + b)`` (the LSTM's memory cell by ``W c + b``); with one
    direction and equal widths the states pass unchanged.
    """

    def __init__(
        self,
        encoder_layers: int,
        directions: int,
        encoder_hidden: int,
        decoder_layers: int,
        decoder_hidden: int,
        lstm: bool,
    ):
        super().__init__()
        self.encoder_layers, self.directions = encoder_layers, directions
        self.decoder_layers = decoder_layers
        width = directions * encoder_hidden
        self.project = directions > 1 or encoder_hidden != decoder_hidden
        self.hidden_proj = nn.Linear(width, decoder_hidden) if self.project else None
        self.cell_proj = (
            nn.Linear(width, decoder_hidden) if self.project and lstm else None
        )

    def _layers(self, h: torch.Tensor) -> torch.Tensor:
        """(L_e*D, n, H_e) -> (L_d, n, D*H_e), contiguous as the kernels need."""
        layers, directions = self.encoder_layers, self.directions
        h = h.view(layers, directions, *h.shape[1:])  # (L_e, D, n, H)
        h = torch.cat(list(h.unbind(1)), dim=-1)  # (L_e, n, D*H)
        if layers != self.decoder_layers:
            h = h[-1:].expand(self.decoder_layers, -1, -1)
        return h.contiguous()

    def forward(self, final: RecurrentState) -> RecurrentState:
        if isinstance(final, tuple):
            h, c = self._layers(final[0]), self._layers(final[1])
            if self.hidden_proj is not None and self.cell_proj is not None:
                h, c = torch.tanh(self.hidden_proj(h)), self.cell_proj(c)
            return h, c
        h = self._layers(final)
        if self.hidden_proj is not None:
            h = torch.tanh(self.hidden_proj(h))
        return h


@dataclass
class RecurrentDecoderState:
    """Decoding state: the decoder's recurrent state and what it attends to."""

    hidden: RecurrentState  # (L, n, H), or (h, c)
    context: torch.Tensor | None  # (n, C): fixed context, without attention
    memory: torch.Tensor | None  # (n, S, C): encoder states, with attention
    projected_keys: torch.Tensor | None  # (n, S, A): U h_j, with attention
    src_mask: torch.Tensor  # (n, S)
    attention: torch.Tensor | None = None  # (n, t, 1, 1, S) if asked

    def reorder(self, index: torch.Tensor) -> RecurrentDecoderState:
        def rows(x: torch.Tensor | None) -> torch.Tensor | None:
            return None if x is None else x.index_select(0, index)

        hidden = self.hidden
        if isinstance(hidden, tuple):
            hidden = (
                hidden[0].index_select(1, index),
                hidden[1].index_select(1, index),
            )
        else:
            hidden = hidden.index_select(1, index)
        return replace(
            self,
            hidden=hidden,
            context=rows(self.context),
            memory=rows(self.memory),
            projected_keys=rows(self.projected_keys),
            src_mask=self.src_mask.index_select(0, index),
            attention=rows(self.attention),
        )


class RecurrentEncoder(Encoder):
    def __init__(self, embedding: nn.Embedding, rnn: RNN, dropout: float):
        super().__init__()
        self.embedding = embedding
        self.rnn = rnn
        self.dropout = Dropout(dropout)

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> EncoderOutput:
        x = self.dropout(self.embedding(src))  # (n, S, E)
        outputs, final = self.rnn(x, src_mask.sum(1))
        return EncoderOutput(outputs, final)


class RecurrentDecoder(Decoder):
    def __init__(
        self,
        embedding: nn.Embedding,
        rnn: RNN,
        bridge: Bridge,
        attention: AdditiveAttention | None,
        encoder_directions: int,
        dropout: float,
    ):
        super().__init__()
        self.embedding = embedding
        self.rnn = rnn
        self.bridge = bridge
        self.attention = attention
        self.encoder_directions = encoder_directions
        embed = embedding.embedding_dim
        context = rnn.input_size - embed
        self.readout = nn.Linear(rnn.hidden_size + context + embed, embed)
        self.dropout = Dropout(dropout)

    def init_state(
        self, memory: EncoderOutput, src_mask: torch.Tensor
    ) -> RecurrentDecoderState:
        hidden = self.bridge(memory.final)
        if self.attention is None:  # c = h_T, fixed for the whole sentence
            context = top_layer(memory.final, self.encoder_directions)
            return RecurrentDecoderState(hidden, context, None, None, src_mask)
        keys = self.attention.project_keys(memory.outputs)
        return RecurrentDecoderState(hidden, None, memory.outputs, keys, src_mask)

    def forward(
        self,
        tgt_in: torch.Tensor,
        state: RecurrentDecoderState,
        tgt_mask: torch.Tensor | None = None,
        need_attention: bool = False,
    ) -> tuple[torch.Tensor, RecurrentDecoderState]:
        """Padding after a target's end only affects later positions, which the
        loss ignores, so ``tgt_mask`` is not needed."""
        embedded = self.dropout(self.embedding(tgt_in))  # (n, T, E)
        attention = None
        if self.attention is None:
            assert state.context is not None
            contexts = state.context.unsqueeze(1).expand(-1, tgt_in.size(1), -1)
            outputs, hidden = self.rnn(
                torch.cat([embedded, contexts], dim=-1), None, state.hidden
            )
        else:
            outputs, contexts, hidden, weights = self._attend_and_step(embedded, state)
            if need_attention:  # (n, T, S) -> (n, T, layers=1, heads=1, S)
                attention = weights[:, :, None, None, :]
        state = replace(state, hidden=hidden, attention=attention)
        features = torch.cat([outputs, contexts, embedded], dim=-1)
        readout = torch.tanh(self.readout(self.dropout(features)))  # (n, T, E)
        return self.dropout(readout), state

    def _attend_and_step(
        self, embedded: torch.Tensor, state: RecurrentDecoderState
    ) -> tuple[torch.Tensor, torch.Tensor, RecurrentState, torch.Tensor]:
        """Bahdanau's decoder, one target position at a time."""
        assert self.attention is not None and state.memory is not None
        assert state.projected_keys is not None
        hidden = state.hidden
        outputs, contexts, weights = [], [], []
        for t in range(embedded.size(1)):
            query = (hidden[0] if isinstance(hidden, tuple) else hidden)[-1]  # s_{i-1}
            context, alpha = self.attention(
                query, state.projected_keys, state.memory, state.src_mask
            )  # c_i (n, C)
            step_input = torch.cat([embedded[:, t], context], dim=-1).unsqueeze(1)
            output, hidden = self.rnn(step_input, None, hidden)
            outputs.append(output)
            contexts.append(context)
            weights.append(alpha)
        return (
            torch.cat(outputs, dim=1),
            torch.stack(contexts, dim=1),
            hidden,
            torch.stack(weights, dim=1),
        )


def build_rnn_seq2seq(
    src_vocab: int,
    tgt_vocab: int,
    *,
    cell: CellKind = "gru",
    embedding_size: int = 256,
    hidden_size: int = 512,
    encoder_layers: int = 1,
    decoder_layers: int = 1,
    bidirectional: bool = False,
    attention: bool = False,
    dropout: float = 0.1,
    share_embeddings: bool = False,
    tie_output: bool = True,
    impl: Impl = "fused",
    gru_variant: str = "torch",
) -> EncoderDecoder:
    """Assemble a recurrent encoder-decoder; the sizes are those of ``RNNConfig``."""
    if share_embeddings and src_vocab != tgt_vocab:
        raise ValueError("shared embeddings need one vocabulary for source and target")
    if gru_variant not in GRU_VARIANTS:
        raise ValueError(f"unknown GRU variant {gru_variant!r}: use 'cho' or 'torch'")
    directions = 2 if bidirectional else 1
    context_size = directions * hidden_size

    def rnn(input_size: int, layers: int, both_ways: bool) -> RNN:
        return RNN(
            cell,
            input_size,
            hidden_size,
            layers,
            both_ways,
            dropout,
            gru_variant=gru_variant,  # type: ignore[arg-type]
            impl=impl,
        )

    src_embedding = nn.Embedding(src_vocab, embedding_size)
    tgt_embedding = (
        src_embedding if share_embeddings else nn.Embedding(tgt_vocab, embedding_size)
    )
    for embedding in (src_embedding, tgt_embedding):
        nn.init.normal_(embedding.weight, std=embedding_size**-0.5)
    output_proj = nn.Linear(embedding_size, tgt_vocab, bias=False)
    if tie_output:
        output_proj.weight = tgt_embedding.weight
    encoder = RecurrentEncoder(
        src_embedding, rnn(embedding_size, encoder_layers, bidirectional), dropout
    )
    decoder = RecurrentDecoder(
        tgt_embedding,
        rnn(embedding_size + context_size, decoder_layers, False),
        Bridge(
            encoder_layers,
            directions,
            hidden_size,
            decoder_layers,
            hidden_size,
            lstm=cell == "lstm",
        ),
        AdditiveAttention(hidden_size, context_size, hidden_size)
        if attention
        else None,
        directions,
        dropout,
    )
    return EncoderDecoder(encoder, decoder, output_proj)
