"""Typed, frozen configuration: YAML in, validated objects out.

Every section is a pydantic model that forbids unknown keys, so a typo such as
``modle.layers`` or ``train.lrate`` is an error naming the key, never a silently
ignored setting. Command-line overrides (``--set train.lr=3e-4``) are applied to
the raw YAML before validation, so they are checked the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    model_validator,
)

from rosetta.errors import RosettaError


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CorpusFiles(_Section):
    """One parallel corpus: two aligned files, or one TSV (source, target, ...)."""

    src: Path | None = None
    tgt: Path | None = None
    tsv: Path | None = None

    @model_validator(mode="after")
    def _one_layout(self) -> CorpusFiles:
        two_files = self.src is not None and self.tgt is not None
        if two_files == (self.tsv is not None) or (self.src is None) != (
            self.tgt is None
        ):
            raise ValueError("give either both 'src' and 'tgt', or 'tsv' alone")
        return self


class DataConfig(_Section):
    train: CorpusFiles
    valid: CorpusFiles | None = None
    test: CorpusFiles | None = None
    src_lang: str = "src"
    tgt_lang: str = "tgt"
    max_len: int = Field(128, gt=0, description="pairs longer (in tokens) are dropped")


class TokenizerConfig(_Section):
    kind: Literal["sentencepiece", "word"] = "sentencepiece"
    model_type: Literal["unigram", "bpe"] = "unigram"
    vocab_size: int = Field(8000, gt=4)
    joint: bool = True
    min_freq: int = Field(1, ge=1, description="word tokenizer: rarer words -> <unk>")
    character_coverage: float = Field(1.0, gt=0.0, le=1.0)


class _ModelSection(_Section):
    """What every model family reads: ``encoder_layers``, ``decoder_layers``,
    ``d_model`` (the embedding width), ``dropout``, ``share_embeddings``,
    ``tie_output``."""

    arch: str  # each family narrows it to its own name
    encoder_layers: int = Field(3, gt=0)
    decoder_layers: int = Field(3, gt=0)
    d_model: int = Field(256, gt=0)
    dropout: float = Field(0.1, ge=0.0, lt=1.0)
    share_embeddings: bool = True
    tie_output: bool = True


class TransformerConfig(_ModelSection):
    """``arch: transformer`` (the default)."""

    arch: Literal["transformer"] = "transformer"
    heads: int = Field(4, gt=0)
    d_ff: int = Field(1024, gt=0)
    attention_dropout: float = Field(0.0, ge=0.0, lt=1.0)
    norm: Literal["post", "pre"] = "post"
    max_positions: int = Field(1024, gt=0)

    @model_validator(mode="after")
    def _heads_divide_width(self) -> TransformerConfig:
        if self.d_model % self.heads:
            raise ValueError(
                f"heads ({self.heads}) must divide d_model ({self.d_model})"
            )
        return self


class RNNConfig(_ModelSection):
    """``arch: rnn``: recurrent encoder-decoders."""

    arch: Literal["rnn"]
    cell: Literal["gru", "lstm", "rnn"] = "gru"
    hidden_size: int = Field(512, gt=0)
    bidirectional: bool = Field(False, description="bidirectional encoder")
    attention: Literal["none", "bahdanau"] = "none"
    rnn_impl: Literal["fused", "reference"] = Field(
        "fused", description="torch's fused kernels, or the cells step by step"
    )
    gru_variant: Literal["torch", "notes"] = Field(
        "torch", description="where the GRU's reset gate acts; fused needs 'torch'"
    )

    @model_validator(mode="after")
    def _fused_gru_is_torchs(self) -> RNNConfig:
        fused_gru = self.cell == "gru" and self.rnn_impl == "fused"
        if fused_gru and self.gru_variant == "notes":
            raise ValueError(
                "the fused kernels compute the torch form of the GRU: "
                "set gru_variant: torch, or rnn_impl: reference for the notes' form"
            )
        return self


ARCHS = ("transformer", "rnn")


def _arch_of(section: Any) -> str | None:
    """Which family a model section belongs to; a YAML section without
    ``arch`` is a Transformer."""
    if isinstance(section, dict):
        return section.get("arch", "transformer")
    return getattr(section, "arch", None)


# The model section: one family's configuration, picked by ``arch``. Each
# family forbids the keys it does not read, like every other section.
ModelConfig = Annotated[
    Annotated[TransformerConfig, Tag("transformer")] | Annotated[RNNConfig, Tag("rnn")],
    Discriminator(
        _arch_of,
        custom_error_type="unknown_arch",
        custom_error_message=f"unknown arch; use one of: {', '.join(ARCHS)}",
    ),
]


class EarlyStopping(_Section):
    metric: Literal["bleu", "loss"] = "bleu"
    patience: int | None = Field(None, gt=0, description="validations without gain")


class TrainConfig(_Section):
    seed: int = 1
    batch_tokens: int = Field(4096, gt=0)
    update_freq: int = Field(
        1, gt=0, description="batches per update: gradients accumulate over them"
    )
    lr: float = Field(5e-4, gt=0.0)
    warmup_steps: int = Field(1000, ge=0)
    decay: Literal["inverse_sqrt", "constant"] = "inverse_sqrt"
    betas: tuple[float, float] = (0.9, 0.98)
    eps: float = Field(1e-9, gt=0.0)
    weight_decay: float = Field(0.0, ge=0.0)
    label_smoothing: float = Field(0.1, ge=0.0, lt=1.0)
    clip_norm: float | None = Field(1.0, gt=0.0)
    max_epochs: int | None = Field(20, gt=0)
    max_steps: int | None = Field(None, gt=0)
    max_minutes: float | None = Field(None, gt=0.0)
    validate_every: int = Field(500, gt=0)
    valid_bleu: bool = True
    early_stopping: EarlyStopping = EarlyStopping()
    keep_last: int = Field(2, gt=0)
    log_every: int = Field(50, gt=0)
    threads: int | None = Field(None, gt=0)
    device: Literal["auto", "cpu", "cuda"] = "auto"
    deterministic: bool = True
    flush_denormals: bool = Field(
        True, description="treat denormal floats as zero on CPUs (speed)"
    )
    precision: Literal["fp32", "bf16", "fp16"] = Field(
        "fp32",
        description="bf16 / fp16: bfloat16 / float16 matrix products, fp16 with "
        "loss scaling (see rosetta.precision)",
    )


class DecodeConfig(_Section):
    max_len_a: float = Field(1.5, ge=0.0)
    max_len_b: int = Field(10, ge=0)
    batch_size: int = Field(64, gt=0)
    max_input_tokens: int = Field(
        512, gt=0, description="longer inputs are truncated with a warning"
    )


class Config(_Section):
    data: DataConfig
    tokenizer: TokenizerConfig = TokenizerConfig()
    model: ModelConfig = TransformerConfig()
    train: TrainConfig = TrainConfig()
    decode: DecodeConfig = DecodeConfig()

    @model_validator(mode="after")
    def _compatible(self) -> Config:
        if self.model.share_embeddings and not self.tokenizer.joint:
            raise ValueError(
                "model.share_embeddings needs one joint vocabulary: "
                "set tokenizer.joint: true or model.share_embeddings: false"
            )
        return self


def apply_override(raw: dict[str, Any], assignment: str) -> None:
    """Apply ``section.key=value`` (value parsed as YAML) to a raw config dict."""
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


def _resolve_paths(raw: dict[str, Any], base: Path) -> None:
    """Make data paths relative to the config file's folder, not the cwd."""
    data = raw.get("data")
    if not isinstance(data, dict):
        return
    for split in ("train", "valid", "test"):
        files = data.get(split)
        if isinstance(files, dict):
            for key in ("src", "tgt", "tsv"):
                if isinstance(files.get(key), str):
                    files[key] = str((base / files[key]).resolve())


def format_validation_error(error: ValidationError, source: str) -> str:
    lines = [f"{source}: invalid configuration"]
    for item in error.errors():
        location = list(item["loc"])
        arch = None
        if location[:1] == ["model"] and location[1:2] and location[1] in ARCHS:
            arch = location.pop(1)  # the family's tag, not a key
        key = ".".join(str(part) for part in location) or "(top level)"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown key" + (f" for arch '{arch}'" if arch else "")
        lines.append(f"  {key}: {message}")
    return "\n".join(lines)


def config_from_dict(raw: dict[str, Any], source: str = "config") -> Config:
    try:
        return Config.model_validate(raw)
    except ValidationError as error:
        raise RosettaError(format_validation_error(error, source)) from None


def yaml_error_message(path: Path, error: yaml.YAMLError) -> str:
    """One line: ``file:line:column: not valid YAML: problem``."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    if mark is None:
        return f"{path}: not valid YAML: {problem}"
    return f"{path}:{mark.line + 1}:{mark.column + 1}: not valid YAML: {problem}"


def load_config(path: str | Path, overrides: list[str] | None = None) -> Config:
    """Read a YAML config, apply ``KEY=VALUE`` overrides and validate it."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise RosettaError(f"{path}: config file not found") from None
    except yaml.YAMLError as error:
        raise RosettaError(yaml_error_message(path, error)) from None
    if not isinstance(raw, dict):
        raise RosettaError(f"{path}: the top level must be a mapping of sections")
    for assignment in overrides or []:
        apply_override(raw, assignment)
    _resolve_paths(raw, path.parent)
    return config_from_dict(raw, str(path))


def config_to_dict(config: Config) -> dict[str, Any]:
    """A JSON-ready dict (paths as strings) that ``config_from_dict`` reads back."""
    return config.model_dump(mode="json")
