"""Scoring and generating text with a trained language model: what
``rosetta.load`` returns for a run of ``task: lm``."""

from __future__ import annotations

import torch

from rosetta.config.language_model_section import LanguageModelSection
from rosetta.data.text import decode_text, encode_text
from rosetta.data.tokenizer import CharacterTokenizer, Tokenizer
from rosetta.data.vocab import UNK_ID
from rosetta.errors import RosettaError
from rosetta.inference.text_scoring import TextScore, score_text
from rosetta.interfaces.language_model import SegmentLanguageModel
from rosetta.interfaces.trained import Trained
from rosetta.runtime.limits import Count, Seed, Size, Temperature, check


class LanguageModel:
    """A trained segment-recurrent language model with its tokenizer.

    For example:

        lm = rosetta.load("runs/tinyshakespeare-char-xl")
        lm.score(open("valid.txt").read()).loss     # nats per token
        lm.generate("ROMEO:", tokens=200, top_k=20, seed=1)
    """

    def __init__(self, trained: Trained):
        """``trained.tokenizers.tgt`` is the language model's tokenizer."""
        self.model: SegmentLanguageModel = trained.model.to(trained.device).eval()  # type: ignore[assignment]
        self.tokenizer: Tokenizer = trained.tokenizers.tgt
        self.config, self.device = trained.config, trained.device
        self.lm: LanguageModelSection = trained.config.model  # type: ignore[assignment]

    @property
    def reads_characters(self) -> bool:
        return isinstance(self.tokenizer, CharacterTokenizer)

    def score(
        self,
        text: str,
        memory_length: int | None = None,
        streams: int = 16,
        progress: bool = False,
    ) -> TextScore:
        """Loss, perplexity and bits per token of ``text`` (see
        ``rosetta.inference.text_scoring``), read with
        ``memory_length`` positions of memory per layer (default: the
        configuration's evaluation memory), in ``streams`` rows side by
        side (the same score as one, faster: ``score_text``)."""
        ids = encode_text(self.tokenizer, text)
        if len(ids) < 2:
            raise RosettaError(
                f"the text has {len(ids)} token(s): at least 2 are needed, one "
                "to predict from and one to predict"
            )
        memory = self.lm.scoring_memory if memory_length is None else memory_length
        return score_text(
            self.model,
            ids,
            self.lm.segment_length,
            memory,
            self.device,
            streams,
            progress,
        )

    def unknown_tokens(self, text: str) -> tuple[int, int]:
        """How many of ``text``'s tokens the vocabulary lacks (read as
        ``<unk>``), and how many tokens it has."""
        ids = encode_text(self.tokenizer, text)
        return sum(1 for token in ids if token == UNK_ID), len(ids)

    @torch.no_grad()
    def generate(
        self,
        prompt: str,
        tokens: int = 200,
        temperature: float = 1.0,
        top_k: int | None = None,
        seed: int | None = None,
    ) -> str:
        """Continue ``prompt`` by ``tokens`` tokens, each sampled from
        ``softmax(logits / temperature)`` restricted to the ``top_k`` likeliest
        (``top_k=1``: greedy).

        The prompt is read a segment at a time; then each new token is one
        step that attends to the cached memory, which keeps the last
        ``memory + segment_length − 1`` positions per layer, the most context
        any token had in training. Nothing is recomputed per token.
        """
        try:
            check(Temperature, temperature, "temperature")
            check(Count | None, top_k, "top-k")
            check(Size, tokens, "tokens")
            check(Seed | None, seed, "seed")
        except ValueError as error:
            raise RosettaError(str(error)) from None
        ids = encode_text(self.tokenizer, prompt)
        if not self.reads_characters and not prompt.endswith("\n") and ids:
            ids = ids[:-1]  # the line goes on: no line break after the prompt
        if not ids:
            raise RosettaError("the prompt is empty: give at least one token")
        generator = torch.Generator(device=self.device)
        if seed is not None:
            generator.manual_seed(seed)
        length, memory_length = self.lm.segment_length, self.lm.scoring_memory
        window = memory_length + length - 1
        context = torch.tensor([ids], device=self.device)  # (1, P)
        memory = None
        for start in range(0, context.size(1) - 1, length):
            chunk = context[:, start : min(start + length, context.size(1) - 1)]
            _, memory = self.model(chunk, memory, memory_length)
        token, produced = context[:, -1:], []
        for _ in range(tokens):
            features, memory = self.model(token, memory, window)
            logits = self.model.output_proj(features[:, -1]).float() / temperature
            if top_k is not None and top_k < logits.size(-1):
                kth = logits.topk(top_k, dim=-1).values[:, -1:]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            probabilities = torch.softmax(logits, dim=-1)
            token = torch.multinomial(probabilities, 1, generator=generator)  # (1, 1)
            produced.append(int(token))
        if self.reads_characters:
            return prompt + decode_text(self.tokenizer, produced)
        # The prompt is given back as written (a word the vocabulary lacks
        # would decode as nothing); the continuation is what decoding the
        # whole adds to the prompt's pieces, so the join has the right space.
        head = decode_text(self.tokenizer, ids)
        whole = decode_text(self.tokenizer, ids + produced)
        if whole.startswith(head):
            return prompt + whole[len(head) :]
        return prompt + " " + decode_text(self.tokenizer, produced)


def language_model(
    trained: Trained, precision: str, packed: bool = True, compiled: object = "auto"
) -> LanguageModel:
    """A language-model family's ``inference``: scores and generates in
    float32; ``packed`` and ``compiled`` change nothing."""
    if precision != "fp32":
        raise RosettaError(f"a language model runs in fp32, not {precision}")
    return LanguageModel(trained)
