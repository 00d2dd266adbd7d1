"""Translating with a non-autoregressive model (``model.arch: nat``).

``NATTranslator`` is what ``rosetta.load`` returns for such a run: the
same text-in, text-out interface, decoding every sentence in one pass
(``rosetta.families.nat.search``). With ``npd`` samples and an autoregressive
``teacher`` it decodes that many fertility sequences per sentence and keeps
the candidate the teacher scores best (noisy parallel decoding).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from rosetta.data.batching import pad
from rosetta.data.vocab import EOS, EOS_ID, PAD_ID
from rosetta.errors import RosettaError
from rosetta.families.nat.model import NonAutoregressiveTransformer
from rosetta.families.nat.search import (
    NATCandidate,
    ctc_candidates,
    nat_candidates,
    teacher_log_probabilities,
)
from rosetta.inference.constraints import Constraint
from rosetta.inference.text_translator import (
    DecodeRequest,
    Found,
    TextTranslator,
    Translation,
)
from rosetta.interfaces.trained import Trained
from rosetta.runtime.precision import autocast, check_precision
from rosetta.runtime.precisions import Precision
from rosetta.search.beam import normalized_score
from rosetta.search.greedy import max_lengths
from rosetta.search.options import SearchOptions

if TYPE_CHECKING:
    from rosetta.config.schema import Config


def check_same_languages(student: Config, teacher: Config) -> None:
    """A teacher scores the student's candidates: it must translate the same
    language pair, in the same direction."""
    pair = (student.data.src_lang, student.data.tgt_lang)
    other = (teacher.data.src_lang, teacher.data.tgt_lang)
    if pair != other:
        raise RosettaError(
            f"the teacher translates {other[0]}→{other[1]}, the model "
            f"{pair[0]}→{pair[1]}: give a teacher of the same direction"
        )


class NATTranslator(TextTranslator):
    """A trained NAT with its tokenizers; ``teacher`` (a ``Translator`` of an
    autoregressive model) and ``npd`` (fertility samples per sentence, 0 for
    the argmax ones alone) set up noisy parallel decoding.

    Candidates are ranked by the teacher's ``log P(y | x)`` normalised by
    length as beam search does (``SearchOptions.alpha`` and ``penalty``).
    """

    engine = "rosetta"
    one_pass = True

    def __init__(
        self,
        trained: Trained,
        precision: Precision = "fp32",
        *,
        teacher: TextTranslator | None = None,
        npd: int = 0,
    ):
        config, device = trained.config, trained.device
        check_precision(device, precision)
        if precision == "int8":
            raise RosettaError("a NAT model decodes in fp32 or bf16, not int8")
        if npd < 0:
            raise RosettaError(f"npd must be >= 0 samples, got {npd}")
        if npd and teacher is None:
            raise RosettaError(
                "noisy parallel decoding needs an autoregressive teacher to "
                "rescore the candidates (--teacher)"
            )
        if teacher is not None and not hasattr(teacher, "model"):
            raise RosettaError("the teacher must be a Rosetta (PyTorch) model")
        if teacher is not None:
            check_same_languages(config, teacher.config)
        if npd and config.model.length_model == "ctc":  # type: ignore[union-attr]
            raise RosettaError(
                "noisy parallel decoding samples fertilities; a model with "
                "length_model ctc has none: translate without --npd"
            )
        self.trained = trained
        self.model: NonAutoregressiveTransformer = trained.model.to(device).eval()  # type: ignore[assignment]
        self.tokenizers, self.config = trained.tokenizers, config
        self.device, self.precision = device, precision
        self.teacher = teacher
        self.npd = npd

    @property
    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def check_search(self, options: SearchOptions) -> None:
        """One pass has no search to steer: beam search, sampling, n-best
        lists and the decoding controls are refused, not ignored."""
        if options.beam_size > 1 or options.sample or options.nbest > 1:
            raise RosettaError(
                "a NAT model decodes in one pass: no beam search, sampling or "
                "n-best lists (noisy parallel decoding is its search: npd)"
            )
        controls = (options.min_length, options.no_repeat_ngram, options.ban)
        if any(controls) or options.banned:
            raise RosettaError(
                "a NAT model decodes in one pass: no minimum length, n-gram "
                "blocking or banned phrases (--min-len, --no-repeat-ngram, --ban)"
            )

    def rescored_by(self, teacher: TextTranslator, samples: int) -> NATTranslator:
        """This model decoding with ``samples`` fertility sequences per
        sentence rescored by ``teacher`` (noisy parallel decoding)."""
        if teacher.one_pass:
            raise RosettaError("the teacher must be autoregressive")
        return self.with_teacher(teacher, samples)

    def with_teacher(self, teacher: TextTranslator | None, npd: int) -> NATTranslator:
        """This model decoding with ``npd`` samples rescored by ``teacher``."""
        return NATTranslator(self.trained, self.precision, teacher=teacher, npd=npd)

    @torch.no_grad()
    def check_constraints(
        self, constraints: list[Constraint], options: SearchOptions
    ) -> None:
        """One pass has no search to steer: constraints are refused."""
        raise RosettaError(
            "a NAT model decodes in one pass: no constraints (a prefix, phrases "
            "to include or exclude); use an autoregressive model"
        )

    def decode_ids(self, request: DecodeRequest) -> Found:
        """One translation per non-empty source (module docstring); ``options``
        gives the attention switch, the seed of the fertility draws, the
        length normalisation of the teacher's scores and the length limit
        ``a·S + b`` (the fertilities past it are dropped)."""
        sources, options, size = request.sources, request.options, request.size
        self.check_search(options)
        samples = max(self.npd, 1)
        generator = torch.Generator(device=self.device)
        generator.manual_seed(options.seed if options.seed is not None else 0)
        nonempty = [i for i, ids in enumerate(sources) if ids]
        order = sorted(nonempty, key=lambda i: len(sources[i]))
        results: list[list[Translation]] = [[] for _ in sources]
        for start in range(0, len(order), size):
            chunk = order[start : start + size]
            src = pad([[*sources[i], EOS_ID] for i in chunk]).to(self.device)
            with autocast(self.device, self.precision):
                src_mask = src != PAD_ID
                limits = max_lengths(
                    src_mask.sum(1), options.max_len_a, options.max_len_b
                )
                if self.model.uses_ctc:
                    candidates = ctc_candidates(
                        self.model,
                        src,
                        src_mask,
                        max_lengths=limits,
                        need_attention=options.need_attention,
                    )
                else:
                    candidates = nat_candidates(
                        self.model,
                        src,
                        src_mask,
                        samples,
                        max_lengths=limits,
                        generator=generator,
                        need_attention=options.need_attention,
                    )
                chosen = self._choose([sources[i] for i in chunk], candidates, options)
            for i, (candidate, rank_score) in zip(chunk, chosen, strict=True):
                results[i] = [self._nat_translation(sources[i], candidate, rank_score)]
            request.done(len(chunk))
        return results

    def _choose(
        self,
        sources: list[list[int]],
        candidates: list[list[NATCandidate]],
        options: SearchOptions,
    ) -> list[tuple[NATCandidate, float]]:
        """Each source's candidate and the score it was ranked by: the model's
        own without NPD, else the teacher's, all candidates in one pass."""
        if self.teacher is None or self.npd == 0:
            return [
                (found[0], found[0].score / max(len(found[0].tokens), 1))
                for found in candidates
            ]
        teacher = self.teacher
        sources_text = [self.tokenizers.src.decode(ids) for ids in sources]
        targets = [
            teacher.tokenizers.tgt.encode(self.tokenizers.tgt.decode(c.tokens))
            for found in candidates
            for c in found
        ]
        source_of = [i for i, found in enumerate(candidates) for _ in found]
        scores = teacher_log_probabilities(
            teacher.model,  # type: ignore[attr-defined]
            [teacher.encode(text) for text in sources_text],
            targets,
            teacher.device,
            source_of,
        ).tolist()
        chosen, start = [], 0
        for found in candidates:
            ranked = [
                normalized_score(
                    scores[start + k],
                    len(targets[start + k]) + 1,
                    options.alpha,
                    options.penalty,
                )
                for k in range(len(found))
            ]
            best = max(range(len(found)), key=lambda k: (ranked[k], -k))
            chosen.append((found[best], ranked[best]))
            start += len(found)
        return chosen

    def _nat_translation(
        self, source: list[int], candidate: NATCandidate, rank_score: float
    ) -> Translation:
        text = self.tokenizers.tgt.decode(candidate.tokens)
        return Translation(
            text=" ".join(text.split()),
            score=candidate.score,
            normalized_score=rank_score,
            token_ids=candidate.tokens,
            tokens=self.tokenizers.tgt.id_pieces(candidate.tokens),
            source_tokens=[*self.tokenizers.src.id_pieces(source), EOS],
            attention=candidate.attention,
            fertilities=candidate.fertilities,
        )
