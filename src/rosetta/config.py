"""Typed, frozen configuration: YAML in, validated objects out.

Every section is a pydantic model that forbids unknown keys, so a typo such as
``modle.layers`` or ``train.lrate`` is an error naming the key, never a silently
ignored setting. Command-line overrides (``--set train.lr=3e-4``) are applied to
the raw YAML before validation, so they are checked the same way.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from rosetta.errors import RosettaError
from rosetta.limits import LengthOffset, LengthRatio, Seed
from rosetta.yaml_file import read_yaml


class _Section(BaseModel):
    # inf and nan are no setting; neither is true for a number (pydantic
    # would read it as 1)
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        annotation = cls.model_fields[info.field_name].annotation
        numeric = {int, float} & {annotation, *get_args(annotation)}
        if isinstance(value, bool) and numeric:
            raise ValueError(f"a number is expected, not {str(value).lower()}")
        return value


class CorpusFiles(_Section):
    """One parallel corpus: two aligned files, or one TSV (source, target, ...);
    or, for a language model (``task: lm``), one long text."""

    src: Path | None = Field(None, description="source side, one sentence per line")
    tgt: Path | None = Field(None, description="target side, line by line with src")
    tsv: Path | None = Field(
        None,
        description="or one file: source TAB target per line (extra columns ignored)",
    )
    text: Path | None = Field(
        None, description="task lm: one long text, read whole (gzip if .gz)"
    )

    @model_validator(mode="after")
    def _one_layout(self) -> CorpusFiles:
        two_files = self.src is not None and self.tgt is not None
        layouts = two_files + (self.tsv is not None) + (self.text is not None)
        if layouts != 1 or (self.src is None) != (self.tgt is None):
            raise ValueError(
                "give either both 'src' and 'tgt', or 'tsv' alone, or 'text' alone"
            )
        return self


class DataConfig(_Section):
    train: CorpusFiles = Field(description="the training corpus")
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


class TokenizerConfig(_Section):
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


class _ModelSection(_Section):
    """What every model family reads: ``encoder_layers``, ``decoder_layers``,
    ``d_model`` (the embedding width), ``dropout``, ``share_embeddings``,
    ``tie_output``."""

    arch: str  # each family narrows it to its own name
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


class _AttentionSection(_ModelSection):
    """What the attention-based encoder-decoders (``transformer``, ``nat``)
    read besides the common keys."""

    heads: int = Field(4, gt=0, description="attention heads; they divide d_model")
    d_ff: int = Field(1024, gt=0, description="inner width of the feed-forward layers")
    attention_dropout: float = Field(
        0.0, ge=0.0, lt=1.0, description="dropout on the attention weights"
    )
    norm: Literal["post", "pre"] = Field(
        "post",
        description="post: LayerNorm(x + sublayer(x)); pre: x + sublayer(LayerNorm(x))",
    )
    max_positions: int = Field(
        1024, gt=0, description="longest sequence the position table covers"
    )

    @model_validator(mode="after")
    def _heads_divide_width(self) -> _AttentionSection:
        if self.d_model % self.heads:
            raise ValueError(
                f"heads ({self.heads}) must divide d_model ({self.d_model})"
            )
        return self


class TransformerConfig(_AttentionSection):
    """``arch: transformer`` (the default)."""

    arch: Literal["transformer"] = Field(
        "transformer",
        description="the model family: transformer, rnn, nat or transformer-xl",
    )
    positions: Literal[
        "sinusoidal", "relative", "randomized", "shifted", "nope", "alibi"
    ] = Field(
        "sinusoidal",
        description="sinusoidal: absolute positions added to the embeddings; "
        "relative: self-attention scores distances (Transformer-XL); "
        "randomized: in training, sinusoids at random sorted positions up "
        "to max_positions; shifted: in training, at consecutive positions "
        "from a random start; nope: sinusoids in the encoder, none in the "
        "decoder; alibi: no sinusoids, every attention subtracts a learned "
        "slope times the distance (cross-attention from both ends of the source)",
    )


class NATConfig(_AttentionSection):
    """``arch: nat``: the non-autoregressive Transformer, which predicts a
    fertility for every source token and then all target tokens at once."""

    arch: Literal["nat"] = Field(
        description="the model family: transformer, rnn, nat or transformer-xl"
    )
    max_fertility: int = Field(
        8, gt=0, description="largest fertility (target tokens per source token)"
    )
    decoder_input: Literal["fertility", "uniform"] = Field(
        "fertility",
        description="decoder input: each source embedding copied as often as its "
        "fertility, or spread evenly over the target length (the fertilities "
        "then only give the length)",
    )
    fertility_weight: float = Field(
        1.0, ge=0.0, description="weight of the fertility loss beside the target's"
    )


class RNNConfig(_ModelSection):
    """``arch: rnn``: recurrent encoder-decoders."""

    arch: Literal["rnn"] = Field(
        description="the model family: transformer, rnn, nat or transformer-xl"
    )
    cell: Literal["gru", "lstm", "rnn"] = Field(
        "gru", description="recurrent cell: GRU, LSTM or tanh RNN"
    )
    hidden_size: int = Field(512, gt=0, description="state width per direction")
    bidirectional: bool = Field(False, description="bidirectional encoder")
    attention: Literal["none", "bahdanau"] = Field(
        "none",
        description="bahdanau: additive attention over the encoder states at "
        "every step; none: the encoder's final state is the context",
    )
    rnn_impl: Literal["fused", "reference"] = Field(
        "fused", description="torch's fused kernels, or the cells step by step"
    )
    gru_variant: Literal["torch", "cho"] = Field(
        "torch", description="where the GRU's reset gate acts; fused needs 'torch'"
    )

    @field_validator("gru_variant", mode="before")
    @classmethod
    def _renamed_variant(cls, value: Any) -> Any:
        return "cho" if value == "notes" else value  # its name in older runs

    @model_validator(mode="after")
    def _fused_gru_is_torchs(self) -> RNNConfig:
        fused_gru = self.cell == "gru" and self.rnn_impl == "fused"
        if fused_gru and self.gru_variant == "cho":
            raise ValueError(
                "the fused kernels compute the torch form of the GRU: "
                "set gru_variant: torch, or rnn_impl: reference for Cho et al.'s form"
            )
        return self


class LanguageModelConfig(_Section):
    """``arch: transformer-xl``: a decoder-only Transformer language model
    (``task: lm``) that reads a long text in segments, each attending to the
    hidden states the previous segments left in its memory."""

    arch: Literal["transformer-xl"] = Field(
        description="the model family: transformer, rnn, nat or transformer-xl"
    )
    layers: int = Field(6, gt=0, description="stacked decoder layers")
    d_model: int = Field(384, gt=0, description="model width")
    heads: int = Field(6, gt=0, description="attention heads; they divide d_model")
    d_ff: int = Field(1536, gt=0, description="inner width of the feed-forward layers")
    dropout: float = Field(0.1, ge=0.0, lt=1.0, description="dropout probability")
    attention_dropout: float = Field(
        0.0, ge=0.0, lt=1.0, description="dropout on the attention weights"
    )
    norm: Literal["post", "pre"] = Field(
        "pre",
        description="post: LayerNorm(x + sublayer(x)); pre: x + sublayer(LayerNorm(x))",
    )
    segment_length: int = Field(
        256, gt=1, description="tokens read (and predicted) per segment"
    )
    memory_length: int = Field(
        256,
        ge=0,
        description="hidden states per layer kept from earlier segments and "
        "attended to; 0: every segment alone (a plain Transformer LM)",
    )
    eval_memory_length: int | None = Field(
        None,
        ge=0,
        description="memory when scoring and generating; null: memory_length",
    )
    eval_streams: int = Field(
        8,
        gt=0,
        description="validation reads the text as this many parallel rows: "
        "faster, but each row starts without context",
    )

    @model_validator(mode="after")
    def _heads_divide_width(self) -> LanguageModelConfig:
        if self.d_model % self.heads:
            raise ValueError(
                f"heads ({self.heads}) must divide d_model ({self.d_model})"
            )
        return self

    @property
    def scoring_memory(self) -> int:
        """The memory length evaluation uses."""
        if self.eval_memory_length is None:
            return self.memory_length
        return self.eval_memory_length


ARCHS = ("transformer", "rnn", "nat", "transformer-xl")


def _arch_of(section: Any) -> str | None:
    """Which family a model section belongs to; a YAML section without
    ``arch`` is a Transformer."""
    if isinstance(section, dict):
        return section.get("arch", "transformer")
    return getattr(section, "arch", None)


# The model section: one family's configuration, picked by ``arch``. Each
# family forbids the keys it does not read, like every other section.
ModelConfig = Annotated[
    Annotated[TransformerConfig, Tag("transformer")]
    | Annotated[RNNConfig, Tag("rnn")]
    | Annotated[NATConfig, Tag("nat")]
    | Annotated[LanguageModelConfig, Tag("transformer-xl")],
    Discriminator(
        _arch_of,
        custom_error_type="unknown_arch",
        custom_error_message=f"unknown arch; use one of: {', '.join(ARCHS)}",
    ),
]


class EarlyStopping(_Section):
    metric: Literal["bleu", "loss"] = Field(
        "bleu", description="validation metric that picks the best checkpoint"
    )
    patience: int | None = Field(None, gt=0, description="validations without gain")


class TrainConfig(_Section):
    seed: Seed = Field(1, description="seed of every random generator")
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
    decay: Literal["inverse_sqrt", "constant"] = Field(
        "inverse_sqrt",
        description="after warm-up: lr·sqrt(warmup/step), or constant lr",
    )
    betas: tuple[float, float] = Field(
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
        None, gt=0.0, description="stop after this much training time"
    )
    validate_every: int = Field(
        500, gt=0, description="updates between validations (and checkpoints)"
    )
    valid_bleu: bool = Field(
        True, description="decode the validation set for BLEU (else loss only)"
    )
    early_stopping: EarlyStopping = Field(
        EarlyStopping(), description="which metric is best, and patience"
    )
    keep_last: int = Field(2, gt=0, description="checkpoints kept besides the best one")
    log_every: int = Field(50, gt=0, description="updates between log lines")
    threads: int | None = Field(
        None, gt=0, description="CPU threads; null: PyTorch's default"
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto", description="auto: a GPU when there is one"
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
        "loss scaling (see rosetta.precision)",
    )


class DecodeConfig(_Section):
    max_len_a: LengthRatio = Field(
        1.5, description="longest output: a·(source length) + b tokens"
    )
    max_len_b: LengthOffset = Field(10, description="see max_len_a")
    batch_size: int = Field(64, gt=0, description="sentences decoded together")
    max_input_tokens: int = Field(
        512, gt=0, description="longer inputs are truncated with a warning"
    )


class Config(_Section):
    task: Literal["translate", "lm"] = Field(
        "translate",
        description="translate: a sequence-to-sequence model on parallel text; "
        "lm: a language model (arch transformer-xl) on one long text",
    )
    data: DataConfig = Field(description="the training, validation and test data")
    tokenizer: TokenizerConfig = Field(
        TokenizerConfig(), description="how text becomes tokens"
    )
    model: ModelConfig = Field(
        TransformerConfig(), description="the architecture, picked by model.arch"
    )
    train: TrainConfig = Field(
        TrainConfig(), description="optimisation and its schedule"
    )
    decode: DecodeConfig = Field(
        DecodeConfig(), description="search limits and batching"
    )

    @model_validator(mode="after")
    def _compatible(self) -> Config:
        language_model = isinstance(self.model, LanguageModelConfig)
        if (self.task == "lm") != language_model:
            raise ValueError(
                "task lm goes with model.arch: transformer-xl, and "
                "transformer-xl with task: lm"
            )
        splits = {"train": self.data.train, "valid": self.data.valid}
        splits["test"] = self.data.test
        for name, files in splits.items():
            if files is not None and (files.text is not None) != language_model:
                kind = "one 'text' file" if language_model else "parallel files"
                raise ValueError(f"data.{name}: task {self.task} reads {kind}")
        if language_model:
            return self
        if self.model.share_embeddings and not self.tokenizer.joint:
            raise ValueError(
                "model.share_embeddings needs one joint vocabulary: "
                "set tokenizer.joint: true or model.share_embeddings: false"
            )
        return self


def apply_override(raw: dict[str, Any], assignment: str) -> str:
    """Apply ``section.key=value`` (value parsed as YAML) to a raw config dict;
    returns the dotted key."""
    if "=" not in assignment:
        raise RosettaError(f"--set {assignment!r}: expected KEY=VALUE")
    dotted, value_text = assignment.split("=", 1)
    keys = dotted.strip().split(".")
    node = raw
    for key in keys[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise RosettaError(f"--set {dotted}: '{key}' is not a section")
        node = child
    node[keys[-1]] = yaml.safe_load(value_text)
    return ".".join(keys)


def _resolve_paths(raw: dict[str, Any], base: Path) -> None:
    """Make data paths relative to the config file's folder, not the cwd."""
    data = raw.get("data")
    if not isinstance(data, dict):
        return
    for split in ("train", "valid", "test"):
        files = data.get(split)
        if isinstance(files, dict):
            for key in ("src", "tgt", "tsv", "text"):
                if isinstance(files.get(key), str):
                    files[key] = str((base / files[key]).resolve())


_FAMILIES: dict[str, type[BaseModel]] = {
    "transformer": TransformerConfig,
    "rnn": RNNConfig,
    "nat": NATConfig,
    "transformer-xl": LanguageModelConfig,
}


def _section(location: list[Any], arch: str | None) -> type[BaseModel] | None:
    """The config class that holds the key at ``location`` (a key path)."""
    sections: dict[str, type[BaseModel]] = {
        "": Config,
        "data": DataConfig,
        "data.train": CorpusFiles,
        "data.valid": CorpusFiles,
        "data.test": CorpusFiles,
        "tokenizer": TokenizerConfig,
        "model": _FAMILIES.get(arch or "transformer", TransformerConfig),
        "train": TrainConfig,
        "train.early_stopping": EarlyStopping,
        "decode": DecodeConfig,
    }
    return sections.get(".".join(str(part) for part in location[:-1]))


def _did_you_mean(location: list[Any], arch: str | None) -> str:
    section = _section(location, arch)
    if section is None:
        return ""
    key = str(location[-1])
    for family, fields in _FAMILIES.items():
        if arch and family != arch and key in fields.model_fields:
            return f"; it is a key of arch '{family}'"
    close = difflib.get_close_matches(key, list(section.model_fields), cutoff=0.5)
    return f"; did you mean '{close[0]}'?" if close else ""


def format_validation_error(
    error: ValidationError, source: str, overridden: frozenset[str] = frozenset()
) -> str:
    """One line per problem, each key named where it was set: in ``source``
    or by ``--set`` (the dotted keys in ``overridden``)."""
    problems = []
    for item in error.errors():
        location = list(item["loc"])
        arch = None
        if location[:1] == ["model"] and location[1:2] and location[1] in ARCHS:
            arch = location.pop(1)  # the family's tag, not a key
        key = ".".join(str(part) for part in location) or "(top level)"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown key" + (f" for arch '{arch}'" if arch else "")
            message += _did_you_mean(location, arch)
        by_set = any(o == key or o.startswith(f"{key}.") for o in overridden)
        where = "--set " if by_set else ""
        problems.append((where, f"  {where}{key}: {message}"))
    from_file = any(not where for where, _ in problems)
    header = f"{source}: invalid configuration" if from_file else "invalid --set"
    return "\n".join([header, *(line for _, line in problems)])


def config_from_dict(
    raw: dict[str, Any],
    source: str = "config",
    overridden: frozenset[str] = frozenset(),
) -> Config:
    try:
        return Config.model_validate(raw)
    except ValidationError as error:
        message = format_validation_error(error, source, overridden)
        raise RosettaError(message) from None


def load_config(path: str | Path, overrides: list[str] | None = None) -> Config:
    """Read a YAML config, apply ``KEY=VALUE`` overrides and validate it."""
    path = Path(path)
    raw = read_yaml(path)
    if not isinstance(raw, dict):
        raise RosettaError(f"{path}: the top level must be a mapping of sections")
    overridden = set()
    for assignment in overrides or []:
        overridden.add(apply_override(raw, assignment))
    _resolve_paths(raw, path.parent)
    return config_from_dict(raw, str(path), frozenset(overridden))


def config_to_dict(config: Config) -> dict[str, Any]:
    """A JSON-ready dict (paths as strings) that ``config_from_dict`` reads back."""
    return config.model_dump(mode="json")
