"""The configuration's sections that do not depend on the model family:
data, tokenizer, training, decoding, and the base every family's ``model``
section extends (``ModelSection``).

Every section is a pydantic model that forbids unknown keys, so a typo such as
``modle.layers`` or ``train.lrate`` is an error naming the key, never a silently
ignored setting.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from rosetta.runtime.limits import Beta, LengthOffset, LengthRatio, Seed


class Section(BaseModel):
    # inf and nan are no setting; neither is true for a number (pydantic
    # would read it as 1)
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, value: object, info: ValidationInfo) -> object:
        if info.field_name is None:  # pydantic names the field to a field validator
            return value
        annotation = cls.model_fields[info.field_name].annotation
        numeric = {int, float} & {annotation, *get_args(annotation)}
        if isinstance(value, bool) and numeric:
            raise ValueError(f"a number is expected, not {str(value).lower()}")
        return value


class CorpusFiles(Section):
    """One parallel corpus: two aligned files, one TSV (source, target, ...)
    or a Hugging Face dataset; or, for a language model (``task: lm``), one
    long text."""

    src: Path | None = Field(None, description="source side, one sentence per line")
    tgt: Path | None = Field(None, description="target side, line by line with src")
    tsv: Path | None = Field(
        None,
        description="or one file: source TAB target per line (extra columns ignored)",
    )
    text: Path | None = Field(
        None, description="task lm: one long text, read whole (gzip if .gz)"
    )
    hf: str | None = Field(
        None,
        description="or a Hugging Face dataset: a hub name (wmt14) or a folder "
        "saved with save_to_disk; needs pip install 'rosetta-nmt[datasets]'",
    )
    config: str | None = Field(None, description="hf: the dataset's configuration")
    split: str | None = Field(None, description="hf: the split (train, validation)")
    columns: tuple[str, str] | None = Field(
        None,
        description="hf: the keys of source and target in each row's translation "
        "(or the two columns); default: data.src_lang and data.tgt_lang",
    )

    @model_validator(mode="after")
    def _one_layout(self) -> CorpusFiles:
        two_files = self.src is not None and self.tgt is not None
        layouts = two_files + sum(
            getattr(self, key) is not None for key in ("tsv", "text", "hf")
        )
        if layouts != 1 or (self.src is None) != (self.tgt is None):
            raise ValueError(
                "give either both 'src' and 'tgt', or 'tsv', 'text' or 'hf' alone"
            )
        hub_keys = [k for k in ("config", "split", "columns") if getattr(self, k)]
        if self.hf is None and hub_keys:
            raise ValueError(f"'{hub_keys[0]}' goes with 'hf' (a Hugging Face dataset)")
        return self


class DataConfig(Section):
    @model_validator(mode="before")
    @classmethod
    def _hub_columns(cls, data: object) -> object:
        """A Hugging Face corpus reads the language codes unless told otherwise."""
        if not isinstance(data, dict):
            return data
        languages = [data.get("src_lang", "src"), data.get("tgt_lang", "tgt")]
        data = dict(data)
        for split in ("train", "valid", "test"):
            files = data.get(split)
            if isinstance(files, dict) and files.get("hf") and not files.get("columns"):
                data[split] = {**files, "columns": languages}
        return data

    train: CorpusFiles | None = Field(
        None,
        description="the training corpus (training needs one; a model imported "
        "with rosetta import has none)",
    )
    valid: CorpusFiles | None = Field(
        None,
        description="validation corpus: loss and BLEU at every validation, the "
        "best checkpoint and early stopping; without it training keeps the latest",
    )
    test: CorpusFiles | None = Field(
        None, description="test corpus, scored by benchmarks and the demo"
    )
    src_lang: str = Field(
        "src", description="source language code, for names and output"
    )
    tgt_lang: str = Field(
        "tgt", description="target language code, for names and output"
    )
    max_len: int = Field(128, gt=0, description="pairs longer (in tokens) are dropped")


class TokenizerConfig(Section):
    kind: Literal["sentencepiece", "word", "char"] = Field(
        "sentencepiece",
        description="subword pieces learned by SentencePiece, words, or "
        "characters (one token each)",
    )
    model_type: Literal["unigram", "bpe"] = Field(
        "unigram", description="sentencepiece: the unigram language model or BPE"
    )
    vocab_size: int = Field(
        8000, gt=4, description="pieces (or most frequent words) per vocabulary"
    )
    joint: bool = Field(True, description="one vocabulary learned from both languages")
    min_freq: int = Field(1, ge=1, description="word tokenizer: rarer words -> <unk>")
    character_coverage: float = Field(
        1.0,
        gt=0.0,
        le=1.0,
        description="sentencepiece: share of characters covered; rarer ones -> <unk>",
    )
    sample_sentences: int = Field(
        500_000,
        gt=0,
        description="sentencepiece: learns from at most this many sentences, "
        "drawn at random from a larger corpus (its memory grows with them: "
        "about 1 GB at 300,000 sentences of 65 characters)",
    )


class ModelSection(Section):
    """What every family's ``model`` section has: ``arch``, its name, and
    what the rest of Rosetta asks of the configuration."""

    TASK: ClassVar[Literal["translate", "lm"]] = "translate"  # what it learns

    arch: str = Field(description="the model family")  # each family's own name

    @classmethod
    def arch_name(cls) -> str:
        """The name ``model.arch`` gives this family: its ``arch``'s one value."""
        (name,) = get_args(cls.model_fields["arch"].annotation)
        return name

    @property
    def position_limit(self) -> int | None:
        """The longest sequence the model can encode or decode, if any."""
        return None

    @property
    def shares_embeddings(self) -> bool:
        """Whether source and target share one embedding (a joint vocabulary)."""
        return False


class EncoderDecoderSection(ModelSection):
    """What every encoder-decoder family reads: ``encoder_layers``,
    ``decoder_layers``, ``d_model`` (the embedding width), ``dropout``,
    ``share_embeddings``, ``tie_output``."""

    encoder_layers: int = Field(3, gt=0, description="stacked encoder layers")
    decoder_layers: int = Field(3, gt=0, description="stacked decoder layers")
    d_model: int = Field(
        256, gt=0, description="embedding width (and the Transformer's model width)"
    )
    dropout: float = Field(0.1, ge=0.0, lt=1.0, description="dropout probability")
    share_embeddings: bool = Field(
        True, description="one embedding for both languages (needs tokenizer.joint)"
    )
    tie_output: bool = Field(
        True, description="the output projection reuses the target embedding"
    )

    @property
    def shares_embeddings(self) -> bool:
        return self.share_embeddings


class EarlyStopping(Section):
    metric: Literal["bleu", "exact", "loss"] = Field(
        "bleu",
        description="validation metric that picks the best checkpoint (exact: "
        "exact-sequence accuracy, with train.valid_exact)",
    )
    patience: int | None = Field(None, gt=0, description="validations without gain")


# the learning-rate decays that end at the run's last step (train.max_steps)
TO_A_FLOOR = ("cosine", "linear")


class TrainConfig(Section):
    seed: Seed = Field(1, description="seed of every random generator")
    init: Path | None = Field(
        None,
        description="start from this run's (or checkpoint's) weights and "
        "tokenizers, with a fresh optimizer and schedule (fine-tuning; "
        "rosetta train --init sets it); its model section must be this one",
    )
    batch_tokens: int = Field(
        4096, gt=0, description="padded tokens per batch (length-bucketed)"
    )
    update_freq: int = Field(
        1, gt=0, description="batches per update: gradients accumulate over them"
    )
    lr: float = Field(
        5e-4, gt=0.0, description="peak learning rate, reached at the warm-up's end"
    )
    warmup_steps: int = Field(
        1000, ge=0, description="updates of linear warm-up from 0 to lr"
    )
    decay: Literal["inverse_sqrt", "constant", "cosine", "linear"] = Field(
        "inverse_sqrt",
        description="after warm-up: lr·sqrt(warmup/step), constant lr, or a "
        "cosine or straight line from lr down to min_lr at max_steps (a run "
        "of known length)",
    )
    min_lr: float = Field(
        0.0, ge=0.0, description="cosine and linear decay: the rate at max_steps"
    )
    betas: tuple[Beta, Beta] = Field(
        (0.9, 0.98), description="Adam's moving-average rates β1, β2"
    )
    eps: float = Field(1e-9, gt=0.0, description="Adam's ε")
    weight_decay: float = Field(0.0, ge=0.0, description="AdamW's decoupled decay")
    label_smoothing: float = Field(
        0.1, ge=0.0, lt=1.0, description="share ε of the target spread evenly"
    )
    clip_norm: float | None = Field(
        1.0, gt=0.0, description="largest gradient norm; null: no clipping"
    )
    max_epochs: int | None = Field(20, gt=0, description="stop after these epochs")
    max_steps: int | None = Field(None, gt=0, description="stop after these updates")
    max_minutes: float | None = Field(
        None,
        gt=0.0,
        description="stop after this many minutes of training, validation and "
        "checkpoints included (the last validation fits inside)",
    )
    validate_every: int = Field(
        500, gt=0, description="updates between validations (and checkpoints)"
    )
    valid_bleu: bool = Field(
        True, description="decode the validation set for BLEU (else loss only)"
    )
    valid_exact: bool = Field(
        False,
        description="decode the validation set for exact-sequence accuracy (%), "
        "the synthetic tasks' score",
    )
    early_stopping: EarlyStopping = Field(
        EarlyStopping(), description="which metric is best, and patience"
    )
    keep_last: int = Field(2, gt=0, description="checkpoints kept besides the best one")
    log_every: int = Field(50, gt=0, description="updates between log lines")
    tensorboard: bool = Field(
        True,
        description="also write every log record as TensorBoard scalars "
        "(tensorboard/), where the tensorboard package is installed",
    )
    threads: int | None = Field(
        None,
        gt=0,
        description="CPU threads; null: the cores other work leaves free when "
        "training starts (rosetta train --threads sets it too)",
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto", description="auto: a GPU when there is one"
    )
    compile: Literal["auto"] | bool = Field(
        "auto",
        description="compile the update with torch.compile (one graph for the "
        "forward pass, loss and backward, one for clipping and Adam); auto: "
        "on a GPU only. Compiled code is cached in ~/.cache/rosetta/torch-compile",
    )
    deterministic: bool = Field(
        True, description="deterministic kernels, so a resumed run repeats exactly"
    )
    flush_denormals: bool = Field(
        True, description="treat denormal floats as zero on CPUs (speed)"
    )
    precision: Literal["fp32", "bf16", "fp16"] = Field(
        "fp32",
        description="bf16 / fp16: bfloat16 / float16 matrix products, fp16 with "
        "loss scaling (see rosetta.runtime.precision)",
    )

    @model_validator(mode="after")
    def _decay_to_a_known_end(self) -> TrainConfig:
        if self.decay in TO_A_FLOOR and self.max_steps is None:
            raise ValueError(
                f"decay {self.decay} ends at train.max_steps: set it (the run's "
                "length in updates)"
            )
        return self

    @field_validator("min_lr")
    @classmethod
    def _floor_below_the_peak(cls, min_lr: float, info: ValidationInfo) -> float:
        lr = info.data.get("lr")
        if lr is not None and min_lr > lr:
            raise ValueError(f"{min_lr} is above lr ({lr})")
        return min_lr


class DecodeConfig(Section):
    max_len_a: LengthRatio = Field(
        1.5, description="longest output: a·(source length) + b tokens"
    )
    max_len_b: LengthOffset = Field(10, description="see max_len_a")
    batch_size: int = Field(64, gt=0, description="sentences decoded together")
    max_input_tokens: int = Field(
        512, gt=0, description="longer inputs are truncated with a warning"
    )
