"""A trained model rebuilt from its folder: configuration, tokenizers and
weights, checked (``rosetta.runs.checkpoint``), in the model of its family."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from rosetta.config.schema import Config
from rosetta.data.tokenizer import TokenizerPair
from rosetta.families import Family, check_model_fits, family_of
from rosetta.inference.text_translator import TextTranslator
from rosetta.interfaces.trained import Trained
from rosetta.jobs.run_config import config_from_dict
from rosetta.nn.meta import uninitialised
from rosetta.runs import checkpoint as ckpt
from rosetta.runs import weights
from rosetta.runs.corpus_languages import CorpusLanguages, read_corpus_languages


@dataclass(frozen=True)
class Restored:
    """One checkpoint's model with what it was trained with."""

    folder: Path  # the checkpoint folder
    config: Config
    tokenizers: TokenizerPair
    model: nn.Module
    device: torch.device  # where the weights were loaded
    family: Family
    # what its run's prepare identified of the training corpus, if anything
    corpus_languages: CorpusLanguages | None = None

    def inference(
        self, precision: str = "fp32", packed: bool = True, compiled: object = "auto"
    ) -> Any:
        """The family's inference object for this model (``Family.inference``);
        a translator knows the corpus's languages (``expected_source``)."""
        trained = Trained(self.model, self.tokenizers, self.config, self.device)
        made = self.family.inference(trained, precision, packed, compiled)
        if isinstance(made, TextTranslator):
            made.corpus_languages = self.corpus_languages
        return made


def run_corpus_languages(checkpoint: Path) -> CorpusLanguages | None:
    """The record of the run a checkpoint folder is in (None for a
    checkpoint outside a run, or a run without one)."""
    run_dir = checkpoint.parent
    if not (run_dir / ckpt.INDEX_FILE).is_file():
        return None
    return read_corpus_languages(run_dir)


def restore(path: str | Path, device: torch.device, which: str = "best") -> Restored:
    """The model of a run folder (its ``which`` checkpoint: best or latest) or
    of one checkpoint folder, its weights loaded onto ``device``."""
    folder = ckpt.resolve_checkpoint(Path(path), which)
    meta = ckpt.read_meta(folder)
    config = config_from_dict(meta["config"], str(folder / ckpt.META_FILE), stored=True)
    tokenizers = TokenizerPair.from_dict(
        meta["tokenizers"], str(folder / ckpt.META_FILE)
    )
    languages = run_corpus_languages(folder)
    family = family_of(config.model)
    sizes = len(tokenizers.src), len(tokenizers.tgt)
    check_model_fits(config.model, *sizes, tokenizers)
    with uninitialised():  # every weight is loaded next
        model = family.build(config.model, *sizes, tokenizers)
    weights.load_weights(folder, model, device, family.upgrade_weights)
    return Restored(folder, config, tokenizers, model, device, family, languages)
