"""The stages of ``benchmarks/gpu_check.py``: their commands, time limits and
the command that sums each one's result up in a line
(``benchmarks/gpu_check_summaries.py``).

The check's parent process imports this module, so it imports nothing but the
standard library: on the GPU machine neither Rosetta nor the carried packages
are importable there, only in the stages' processes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUMMARIES = ROOT / "benchmarks/gpu_check_summaries.py"
PYTEST_FLAGS = ["-q", "-p", "no:cacheprovider", "--continue-on-collection-errors"]
# the files whose device cases (``-k cuda``) a GPU check runs
DEVICE_TESTS = [
    "tests/project/test_gpu.py",
    "tests/runtime/test_devices.py",
    "tests/runtime/test_precision.py",
    "tests/nn/test_dropout.py",
    "tests/train/test_validation.py",
    "tests/search/test_trained_models.py",
    "tests/families/transformer/test_packed.py",
    "tests/serve/test_app.py",
]


@dataclass(frozen=True)
class Sizes:
    """How much each stage does: a GPU's sizes, or the dry run's tiny ones."""

    shapes: tuple[str, ...]  # SHAPE:BATCH_TOKENS of the training speed
    compiled: tuple[str, ...]  # measured compiled, after those
    speed_steps: int
    speed_warmup: int
    teacher: tuple[str, ...]  # how long the teacher trains (config overrides)
    sentences: int  # decoded at batch 32 and 128, and scored by the NAT stage
    batch_1_sentences: int
    lm_config: str
    lm: tuple[str, ...]
    nat: tuple[str, ...]
    seconds: dict[str, float] = field(default_factory=dict)

    def changed(self, settings: list[str]) -> Sizes:
        """``--set name=value``: a number, or a comma-separated list."""
        kinds = {f.name: f.type for f in fields(self)}
        values = {}
        for setting in settings:
            name, _, value = setting.partition("=")
            if name not in kinds or name == "seconds":
                raise SystemExit(f"--set {setting}: sizes are {', '.join(kinds)}")
            if "tuple" in str(kinds[name]):
                values[name] = tuple(v for v in value.split(",") if v)
            elif name in ("lm_config",):
                values[name] = value
            else:
                values[name] = int(value)
        return replace(self, **values)


SIZES = {
    "cuda": Sizes(
        shapes=("base:25000",),
        compiled=("base:25000",),
        speed_steps=10,
        speed_warmup=3,
        teacher=("train.max_minutes=0.5", "train.validate_every=500"),
        sentences=1000,
        batch_1_sentences=30,
        lm_config="configs/tinyshakespeare-char-xl.yaml",
        lm=("train.max_minutes=0.7", "train.validate_every=200"),
        nat=("train.max_minutes=0.4", "train.validate_every=500"),
        # limits for a fresh machine, where each process pays the first use of
        # CUDA, cuBLAS and cuDNN (~15-30 s before its first step; the training
        # stage stopped at 90 s there). A training stage's minutes include its
        # validations and checkpoints; the rest of its limit is that start and
        # the last save. Nine minutes, every stage at its limit:
        #   the parent: wheels installed, eflomal built, the GPU named,
        #               five summaries                                   30
        #   tests    the cuda cases, first CUDA use of all               75
        #   train    base in fp32 and bf16: eager and HF (4 measurements
        #            of 13 steps), then compiled (2, each a cold
        #            compile), 2 products' ceilings, tokenizers,
        #            transformers; the rows are kept as they come       150
        #   teacher  30 s of training + 30                               60
        #   decode   1,000 sentences 2 ways, 30 at batch 1, 2 engines
        #            eager, then compiled: a warm-up pass compiling and
        #            recording its 3 or 4 graphs, then timed             100
        #   lm       42 s of training + 23                               65
        #   nat      24 s of training + 11, then 2 models decoding 25    60
        #   30 + 75 + 150 + 60 + 100 + 65 + 60 = 540 s = 9 min (the last
        #   check took 360 s for all six before the compiled rows: each
        #   limit gave up a few of its seconds to spare for the decode's)
        seconds=dict(tests=75, train=150, teacher=60, decode=100, lm=65, nat=60),
    ),
    "cpu": Sizes(
        shapes=("bundled:400", "base:300"),
        compiled=("tiny:400",),  # a CPU compiles the bundled shape in minutes
        speed_steps=1,
        speed_warmup=1,
        teacher=("train.max_steps=30", "train.validate_every=30"),
        sentences=24,
        batch_1_sentences=3,
        lm_config="configs/tinyshakespeare-char-xl-cpu.yaml",
        lm=("train.max_steps=6", "train.validate_every=3", "train.batch_tokens=512"),
        nat=("train.max_steps=10", "train.validate_every=10"),
        # far above what an idle 2-core machine takes (8, 25, 40, 12, 15 and
        # 60 s): a busy CI machine must not fail the dry run by the clock. At
        # a load of 5 on 2 cores they took 15, 167, 113, 26, 43 and 176 s (the
        # training speed ran past 240 s with two timed steps, not with one;
        # its compiled rows add two cold compiles of a one-layer model: the
        # stage took 504 s with a test run beside it; the compiled decoding
        # compiles 3 or 4 graphs of the bundled model); the limits sum to 41
        # minutes, within the dry run's 45
        seconds=dict(tests=240, train=900, teacher=300, decode=480, lm=180, nat=360),
    ),
}


@dataclass
class Stage:
    name: str
    commands: list[list[str]]
    seconds: float  # its limit
    least_seconds: float  # not started with less left
    # run after the stage's commands, however they ended, in the stage's
    # environment: prints the summary as one JSON object
    summary: list[str] | None = None


def settings(*overrides: str) -> list[str]:
    return [flag for o in overrides for flag in ("--set", o)]


def stages_for(
    device: str, sizes: Sizes, work: Path, only: list[str] | None, python: str
) -> list[Stage]:
    """The stages, their commands run by ``python`` (the stages' interpreter)."""
    bench = ROOT / "benchmarks"
    rosetta = [python, "-m", "rosetta.cli"]

    def summary(stage: str, path: Path) -> list[str]:
        return [python, str(SUMMARIES), stage, str(path)]

    teacher, lm, nat = work / "teacher", work / "lm", work / "nat"
    # the quality stages train eagerly: their budgets are minutes of a fresh
    # machine, which a cold compile would take (the train stage measures it)
    on = f"train.device={device}"
    eager = "train.compile=false"
    tests = DEVICE_TESTS if device == "cuda" else DEVICE_TESTS[:1]
    pick = ["-k", "cuda"] if device == "cuda" else []
    env_note = ["env", "ROSETTA_REQUIRE_CUDA=1"] if device == "cuda" else []
    xml = work / "tests.xml"
    gold = ROOT / "data/multi30k/train.en.gz"
    s = sizes.seconds
    stages = [
        Stage(
            "tests",
            [
                [
                    *env_note,
                    python,
                    "-m",
                    "pytest",
                    *PYTEST_FLAGS,
                    *tests,
                    *pick,
                    f"--junitxml={xml}",
                ]
            ],
            s["tests"],
            30,
            summary("tests", xml),
        ),
        Stage(
            "train",
            [
                [
                    python,
                    str(bench / "gpu_speed.py"),
                    "--device",
                    device,
                    "--shapes",
                    *sizes.shapes,
                    "--compiled",
                    *sizes.compiled,
                    "--steps",
                    str(sizes.speed_steps),
                    "--warmup",
                    str(sizes.speed_warmup),
                    "--json",
                    str(work / "train.json"),
                ]
            ],
            s["train"],
            30,
            summary("train", work / "train.json"),
        ),
        Stage(
            "teacher",
            [
                [
                    *rosetta,
                    "train",
                    "configs/multi30k-de-en-transformer.yaml",
                    "-o",
                    str(teacher),
                    *settings(on, eager, *sizes.teacher),
                ]
            ],
            s["teacher"],
            30,
        ),
        Stage(
            "decode",
            [
                [
                    python,
                    str(bench / "decode_speed.py"),
                    "--device",
                    device,
                    "--run-dir",
                    str(teacher),
                    "--threads",
                    "1",
                    "--repeats",
                    "1",
                    "--batch-sizes",  # the goals' sizes (128 adds no finding)
                    "1",
                    "32",
                    "--beams",
                    "1",
                    "5",
                    "--sentences",
                    str(sizes.sentences),
                    "--batch-1-sentences",
                    str(sizes.batch_1_sentences),
                    "--compiled",
                    "--json",
                    str(work / "decode.json"),
                ]
            ],
            s["decode"],
            30,
            summary("decode", work / "decode.json"),
        ),
        Stage(
            "lm",
            [
                [
                    *rosetta,
                    "train",
                    sizes.lm_config,
                    "-o",
                    str(lm),
                    *settings(on, eager, *sizes.lm),
                ]
            ],
            s["lm"],
            30,
            summary("lm", lm),
        ),
        Stage(
            "nat",
            [
                [
                    *rosetta,
                    "train",
                    "configs/multi30k-de-en-nat-ctc.yaml",
                    "-o",
                    str(nat),
                    *settings(on, eager, f"data.train.tgt={gold}", *sizes.nat),
                ],
                [
                    python,
                    str(bench / "nat_multi30k.py"),
                    "--teacher",
                    str(teacher),
                    "--ctc",
                    str(nat),
                    "--device",
                    device,
                    "--npd",
                    "--sentences",
                    str(min(sizes.sentences, 300)),
                    "--latency-sentences",
                    str(sizes.batch_1_sentences * 2),
                    "--flops-sentences",
                    "2",
                    "--rounds",
                    "1",
                    "--json",
                    str(work / "nat.json"),
                    "--plot",
                    str(work / "nat.png"),
                ],
            ],
            s["nat"],
            30,
            summary("nat", work / "nat.json"),
        ),
    ]
    return [stage for stage in stages if only is None or stage.name in only]
