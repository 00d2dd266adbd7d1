"""Translate with a CTranslate2 export of a Rosetta model (``rosetta export
ctranslate2``): the same text in and out, the same options where CTranslate2
has them, and the same ``Translation`` records as ``Translator``.

CTranslate2's beam search keeps ``k`` live prefixes and ends a sentence once
``k`` candidates have finished, Rosetta's ``refill=True`` with
``stopping="k_finished"``; its length normalisation divides by ``L^α``, the
``power`` penalty. Other search options are refused with a clear error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from rosetta.config.reading import config_from_dict
from rosetta.data.tokenizer import TokenizerPair
from rosetta.data.vocab import EOS
from rosetta.errors import RosettaError
from rosetta.families.transformer.build import build
from rosetta.families.transformer.config import TransformerConfig
from rosetta.families.transformer.ctranslate2.export import (
    import_ctranslate2,
    read_engine_file,
)
from rosetta.families.transformer.ctranslate2.files import ENGINE_FILE
from rosetta.inference.constraints import Constraint
from rosetta.inference.text_translator import (
    DecodeRequest,
    Found,
    TextTranslator,
    Translation,
)
from rosetta.runtime.own_files import not_own
from rosetta.runtime.records import read_record
from rosetta.search.greedy import Hypothesis, max_lengths
from rosetta.search.options import SearchOptions

# Rosetta's precision names -> CTranslate2's compute types
COMPUTE_TYPES = {
    "fp32": "float32",
    "bf16": "bfloat16",
    "fp16": "float16",
    "int8": "int8",
}


def check_vocabularies(folder: Path, tokenizers: TokenizerPair) -> None:
    """The export's vocabulary files list the tokenizers' pieces, in order:
    one out of step would turn every id into another word."""
    src = tokenizers.src.id_pieces(range(len(tokenizers.src)))
    tgt = tokenizers.tgt.id_pieces(range(len(tokenizers.tgt)))
    expected = {  # CTranslate2 writes one shared file when the two are equal
        "source_vocabulary.json": src,
        "target_vocabulary.json": tgt,
        "shared_vocabulary.json": tgt,
    }
    found = [name for name in expected if (folder / name).is_file()]
    if not found:
        raise RosettaError(f"{folder}: no vocabulary file; export the model again")
    for name in found:
        pieces = read_record(folder / name, list[str], "a list of pieces")
        if pieces != expected[name]:
            raise RosettaError(
                f"{folder / name}: not the vocabulary of the tokenizers in "
                f"{ENGINE_FILE}; export the model again"
            )


def check_export_files(folder: Path) -> None:
    """Every file of the export is a plain file of the folder: CTranslate2
    opens them itself, and would follow a link out of it or wait forever on
    a FIFO."""
    for entry in sorted(Path(folder).iterdir()):
        if entry.is_symlink():
            raise not_own(entry, "a symbolic link")
        if not (entry.is_file() or entry.is_dir()):
            raise not_own(entry, "not a plain file")


class CTranslate2Translator(TextTranslator):
    """A CTranslate2 model and the tokenizers exported beside it.

    For example:

        translator = rosetta.load("de-en-ct2", engine="ctranslate2")
        translator.translate(["Ein Hund läuft im Schnee."])
    """

    engine = "ctranslate2"

    def __init__(self, folder: Path, device: str, precision: str, threads: int):
        ctranslate2 = import_ctranslate2()
        engine = read_engine_file(folder)
        # an export holds a Transformer: its section is the one to read
        self.config = config_from_dict(
            engine["config"], (TransformerConfig,), str(folder), stored=True
        )
        self.tokenizers = TokenizerPair.from_dict(
            engine["tokenizers"], str(folder / ENGINE_FILE)
        )
        if precision not in COMPUTE_TYPES:
            raise RosettaError(
                f"precision {precision!r}: use one of {', '.join(COMPUTE_TYPES)}"
            )
        self.precision = precision
        self.device = torch.device(device)
        check_export_files(folder)
        try:
            self.model = ctranslate2.Translator(
                str(folder),
                device=device,
                compute_type=COMPUTE_TYPES[precision],
                intra_threads=threads,
            )
        except (RuntimeError, ValueError) as error:  # a file missing or damaged
            raise RosettaError(
                f"{folder}: CTranslate2 cannot load this export ({error})"
            ) from None
        check_vocabularies(folder, self.tokenizers)
        self._parameters = _parameter_count(self.config, self.tokenizers)
        target = self.tokenizers.tgt
        self._target_ids = {
            piece: i for i, piece in enumerate(target.id_pieces(range(len(target))))
        }

    @property
    def parameter_count(self) -> int:
        return self._parameters

    def check_constraints(
        self, constraints: list[Constraint], options: SearchOptions
    ) -> None:
        """CTranslate2 takes a prefix in greedy search; phrases to include
        or exclude, and a prefix in its beam, are Rosetta's search's."""
        if any(c.include or c.exclude for c in constraints):
            raise RosettaError(
                "CTranslate2 takes a prefix, not phrases to include or exclude; "
                "use --engine rosetta"
            )
        if options.beam_size > 1:  # its beam ranks the candidates after a prefix
            raise RosettaError(  # otherwise (it keeps some that Rosetta ends)
                "CTranslate2 takes a prefix with greedy search only; use "
                "--engine rosetta for a beam"
            )

    def decode_ids(self, request: DecodeRequest) -> Found:
        sources, options = request.sources, request.options
        constraints = request.constraints
        arguments = search_arguments(options)
        pieces = {
            i: [*self.tokenizers.src.id_pieces(ids), EOS]
            for i, ids in enumerate(sources)
            if ids
        }
        prefixes = {  # as the Rosetta search's, a prefix raises a limit short of it
            i: self.tokenizers.tgt.id_pieces(list(constraints[i].prefix))
            for i in pieces
            if constraints is not None
        }
        limits = dict(
            zip(
                pieces,
                max_lengths(
                    torch.tensor([len(p) for p in pieces.values()], dtype=torch.long),
                    options.max_len_a,
                    options.max_len_b,
                    self.position_limit,
                    torch.tensor([len(prefixes.get(i, ())) + 1 for i in pieces]),
                ).tolist(),
                strict=True,
            )
        )
        if any(prefixes.values()):
            arguments = {**arguments, "target_prefix": prefixes}
        # CTranslate2 takes one length limit per call, Rosetta one per
        # sentence. One call with the largest limit decodes each sentence as
        # its own limit would until that limit: a greedy or sampled output is
        # then cut there. A beam ends once its k-th candidate has finished;
        # when all k finished before the sentence's own limit, that limit
        # never acted and the result stands, otherwise the sentence is decoded
        # again under its own limit.
        largest = max(limits.values(), default=0)
        results: list[list[Translation]] = [[] for _ in sources]
        found = self._decode(list(limits), largest, arguments, request.size, pieces)
        again: dict[int, list[int]] = {}
        for i, result in found.items():
            longest = max(map(len, result.hypotheses))  # </s> included
            if options.beam_size > 1 and longest >= limits[i] < largest:
                again.setdefault(limits[i], []).append(i)
        for limit, rows in again.items():
            found |= self._decode(rows, limit, arguments, request.size, pieces)
        for i, result in found.items():
            results[i] = self._translations(
                result, pieces[i], options, limits[i], bool(prefixes.get(i))
            )
        request.done(len(found))  # one call decodes them all
        return results

    def _decode(
        self,
        rows: list[int],
        limit: int,
        arguments: dict[str, Any],
        size: int,
        pieces: dict[int, list[str]],
    ) -> dict[int, Any]:
        """CTranslate2's results for ``rows``, decoded under ``limit``."""
        if "target_prefix" in arguments:  # the rows' own, in their order
            prefixes = arguments["target_prefix"]
            arguments = {**arguments, "target_prefix": [prefixes[i] for i in rows]}
        found = self.model.translate_batch(
            [pieces[i] for i in rows],
            max_decoding_length=limit,
            max_batch_size=size,
            **arguments,
        )
        return dict(zip(rows, found, strict=True))

    def _translations(
        self,
        result: Any,
        source: list[str],
        options: SearchOptions,
        limit: int,
        prefixed: bool = False,
    ) -> list[Translation]:
        """Rosetta's translations of CTranslate2's ``result``; ``prefixed``: its
        scores leave out the prefix, so they are computed again in full."""
        translations = []
        for index, tokens in enumerate(result.hypotheses[: options.nbest]):
            normalized = result.scores[index]
            score = normalized
            ended = bool(tokens) and tokens[-1] == EOS
            tokens = tokens[:-1] if ended else tokens
            if options.beam_size == 1 and len(tokens) >= limit:
                # decoded under a longer limit: cut to this one's, where it
                # ends without scoring <eos>
                tokens = tokens[:limit]
                normalized = score = self._log_probability(source, tokens)
            ids = [self._target_ids[piece] for piece in tokens]
            scored = len(ids) + (ended and len(ids) < limit)  # <eos> when produced
            if prefixed:
                score = self._log_probability(
                    source, tokens, ended and len(ids) < limit
                )
                normalized = score / scored**options.alpha if options.alpha else score
            if options.beam_size > 1 and options.alpha:
                score = normalized * scored**options.alpha
            attention = None
            if options.need_attention:
                rows = result.attention[index][:scored]  # one per generated token
                weights = torch.tensor(rows, dtype=torch.float32)
                weights = weights.reshape(len(rows), len(source))
                attention = weights[:, None, None, :]  # (steps, 1 layer, 1 head, S)
            hypothesis = Hypothesis(
                ids,
                score,
                normalized_score=normalized if options.beam_size > 1 else None,
                attention=attention,
                ended=ended and len(ids) < limit,
            )
            translations.append(self._translation(hypothesis, source, options))
        return translations

    def _log_probability(
        self, source: list[str], tokens: list[str], ended: bool = False
    ) -> float:
        """Σ log P of ``tokens`` (and ``<eos>`` if ``ended``) after ``source``."""
        [scored] = self.model.score_batch([source], [tokens])
        return float(sum(scored.log_probs[: len(tokens) + ended]))


def search_arguments(options: SearchOptions) -> dict[str, Any]:
    """CTranslate2's ``translate_batch`` arguments for ``options``, or a clear
    error for what it does not do."""
    if options.penalty != "power":
        raise RosettaError(
            "CTranslate2 normalises by L^α only: use the power penalty, not gnmt"
        )
    if options.beam_size > 1 and not (
        options.refill and options.stopping == "k_finished"
    ):
        raise RosettaError(
            "CTranslate2's beam keeps k live prefixes and stops once k have "
            "finished: use --refill --stopping k_finished (refill=True, "
            "stopping='k_finished')"
        )
    if options.min_length or options.no_repeat_ngram or options.ban:
        raise RosettaError(
            "--min-len, --no-repeat-ngram and --ban are Rosetta's search "
            "controls; use --engine rosetta"
        )
    if options.sample and options.seed is not None:
        # its random generators live in its own worker threads
        raise RosettaError("CTranslate2's sampling cannot be seeded: leave out --seed")
    arguments: dict[str, Any] = {
        "beam_size": options.beam_size,
        # a beam returns all k finished: the longest tells whether the
        # sentence's own length limit could have acted
        "num_hypotheses": options.beam_size if options.beam_size > 1 else options.nbest,
        "length_penalty": options.alpha if options.beam_size > 1 else 0.0,
        "min_decoding_length": 0,  # CTranslate2's default forbids ending at once
        "return_scores": True,
        "return_attention": options.need_attention,
        "return_end_token": True,  # and its attention row, as Rosetta's
    }
    if options.sample:
        arguments |= {
            "sampling_topk": options.top_k,  # 0: the whole vocabulary
            "sampling_topp": options.top_p,
            "sampling_temperature": options.temperature,
        }
    return arguments


def _parameter_count(config: Any, tokenizers: TokenizerPair) -> int:
    """The PyTorch model's weight count, from its configuration."""
    with torch.device("meta"):
        model = build(
            config.model, len(tokenizers.src), len(tokenizers.tgt), tokenizers
        )
    return sum(p.numel() for p in model.parameters())
