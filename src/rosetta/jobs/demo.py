"""``rosetta demo`` (``make demo``): train the bundled default for a fixed
number of updates, translate Multi30k test_2016, score it, show a few
translations and what to try next.

The budget is counted in updates, not minutes, so a slow or busy machine takes
longer but learns as much. A GPU, when there is one, trains the configuration's
whole schedule instead: it does that in minutes.

At such a budget the bundled Transformer trains with relative positions
(``SHORT_BUDGET``): in 600 updates they reach far more BLEU than the
bundled sinusoids (docs/performance.md, "The demo").
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch
from tqdm import tqdm

from rosetta.config.schema import Config
from rosetta.data.corpus import read_corpus
from rosetta.data.encoded_pairs import EncodedPairs
from rosetta.evaluate.corpus import evaluate_all
from rosetta.families import family_of
from rosetta.interfaces.trained import Trained
from rosetta.jobs.demo_budget import CPU_STEPS, DEFAULT_CONFIG
from rosetta.jobs.loading import load_translator
from rosetta.jobs.run_config import load_config
from rosetta.jobs.training import (
    check_new_run_folder,
    configure_torch,
    pick_device,
    process_settings_kept,
    run_training,
)
from rosetta.runs.checkpoint import INDEX_FILE
from rosetta.search.options import SearchOptions
from rosetta.train.prepare import PreparedData, prepare_data
from rosetta.train.trainer import Trainer
from rosetta.train.training_task import TrainingSetup

# what the default trains with at CPU_STEPS: measured in docs/performance.md
SHORT_BUDGET = ("model.positions=relative",)

# what make's set-up leaves in the environment: the seconds it took
SETUP_STAMP = Path(sys.prefix) / ".installed"
SETUP_JUST_NOW = 120  # seconds: a stamp this fresh was this make's set-up
TRANSLATE_BLOCK = 100  # sentences per step of the progress bar
SAMPLE_SENTENCES = 32  # validation sentences timed for the estimate


def run_demo(
    config_file: str,
    steps: int | None,
    device_name: str,
    output: str,
    settings: list[str],
    fresh: bool,
) -> None:
    """Train ``config_file`` (with ``settings``, ``KEY=VALUE``) for ``steps``
    updates (None: the configuration's schedule on a GPU, ``CPU_STEPS`` on
    a CPU) into ``output`` (or a new folder beside it, unless ``fresh``),
    then translate and score its test set."""
    device = pick_device(device_name)
    steps = steps or (CPU_STEPS if device.type == "cpu" else None)
    budget = [f"train.device={device.type}"]
    if steps is not None:
        warmup = min(400, steps // 3)
        budget += [
            f"train.max_steps={steps}",
            "train.max_epochs=null",
            f"train.warmup_steps={warmup}",
            f"train.validate_every={max(steps // 2, 1)}",
        ]
    short = short_budget_settings(config_file, steps, settings)
    config = load_config(config_file, [*short, *settings, *budget])
    if config.data.test is None:
        raise SystemExit(
            f"{config_file}: the demo scores data.test; this config has none"
        )
    run_dir = choose_run_dir(Path(output), fresh)

    started = time.perf_counter()
    print(f"Rosetta demo: {config_file} on {device.type} into {run_dir}")
    if short:
        print(
            f"At {steps} updates it trains with {', '.join(short)}: they learn "
            "faster at this budget (docs/performance.md, 'The demo')."
        )
    seconds, per_epoch, per_sentence = measure_updates(config, run_dir, device)
    total = steps or per_epoch * (config.train.max_epochs or 1)
    decoding = per_sentence * sentences_decoded(config, total)
    # the parts as shown, and their sum: the sentence adds up as printed
    training_minutes = round(total * seconds / 60, 1)
    decoding_minutes = round(decoding / 60, 1)
    setup = setup_minutes(SETUP_STAMP, time.time())
    after = "" if setup is None else f", after the set-up's {setup:.1f}"
    print(
        f"One update takes {seconds:.2f} s here (measured just now): about "
        f"{training_minutes:.1f} minutes for {total} updates, and about "
        f"{decoding_minutes:.1f} for the validations and translating the test "
        f"set: {training_minutes + decoding_minutes:.1f} minutes in all{after}. "
        "The progress bar corrects this estimate as training goes.\n"
    )
    run_training(config, run_dir)

    pairs = read_corpus(config.data.test)
    sources, references = [s for s, _ in pairs], [t for _, t in pairs]
    print()
    hypotheses = translate_with_progress(
        load_translator(run_dir, device=device), sources
    )
    print()
    shown = list(zip(sources, hypotheses, references, strict=True))[:5]
    for source, hypothesis, reference in shown:
        print(f"  source     {source}\n  rosetta    {hypothesis}")
        print(f"  reference  {reference}\n")
    for score in evaluate_all(hypotheses, references):
        print(score)
    minutes = (time.perf_counter() - started) / 60
    with_setup = "" if setup is None else f" ({minutes + setup:.1f} with the set-up)"
    print(f"\nDone in {minutes:.1f} min{with_setup}. The model is in {run_dir}.")
    print(next_steps(run_dir, config))


def setup_minutes(stamp: Path, now: float) -> float | None:
    """The minutes ``make``'s set-up took, where it ran just before this demo
    (its ``stamp`` written within ``SETUP_JUST_NOW`` seconds of ``now``,
    holding its seconds); None where it ran earlier, or not at all."""
    try:
        if now - stamp.stat().st_mtime > SETUP_JUST_NOW:
            return None
        return int(stamp.read_text().strip()) / 60
    except (OSError, ValueError):  # no stamp, or one from an older Makefile
        return None


def translate_with_progress(translator, sources: list[str]) -> list[str]:
    """``sources`` translated a block at a time under a progress bar (as
    ``rosetta translate`` decodes: one worker per core)."""
    hypotheses: list[str] = []
    with tqdm(
        total=len(sources), desc="translating the test set", unit=" sentences"
    ) as bar:
        for start in range(0, len(sources), TRANSLATE_BLOCK):
            block = sources[start : start + TRANSLATE_BLOCK]
            hypotheses += translator.translate(block, workers="auto")
            bar.update(len(block))
    return hypotheses


def short_budget_settings(
    config: str, steps: int | None, settings: list[str]
) -> list[str]:
    """``SHORT_BUDGET``, for the bundled default trained for a number of
    updates, less what ``settings`` (the user's ``--set``) choose."""
    if Path(config).resolve() != Path(DEFAULT_CONFIG).resolve() or steps is None:
        return []
    chosen = {setting.split("=", 1)[0] for setting in settings}
    return [s for s in SHORT_BUDGET if s.split("=", 1)[0] not in chosen]


def choose_run_dir(wanted: Path, fresh: bool) -> Path:
    """``wanted``, or the first free ``wanted-2``, ``-3``, ... so that an
    earlier run is kept; with ``fresh``, the run in ``wanted`` removed (a
    folder holding anything but a run is refused, never emptied)."""
    if fresh:
        if wanted.exists() and not (wanted / INDEX_FILE).is_file():
            check_new_run_folder(wanted)
        shutil.rmtree(wanted, ignore_errors=True)
        return wanted
    candidate, number = wanted, 1
    while candidate.exists():
        number += 1
        candidate = wanted.with_name(f"{wanted.name}-{number}")
    if candidate != wanted:
        print(f"{wanted} holds an earlier run and is kept (--fresh replaces it).")
    return candidate


def sentences_decoded(config: Config, updates: int) -> int:
    """How many sentences the run and the demo translate: the validation set
    at each validation that decodes, and the test set."""
    validations = updates // config.train.validate_every
    if updates % config.train.validate_every:
        validations += 1  # the last update validates too
    decodes = config.train.valid_bleu or config.train.valid_exact
    valid = len(read_corpus(config.data.valid)) if decodes and config.data.valid else 0
    return valid * validations + len(read_corpus(config.data.test))


def measure_updates(
    config: Config, run_dir: Path, device: torch.device
) -> tuple[float, int, float]:
    """Seconds per update (the median of a few updates of a throwaway copy of
    the model, on real batches), updates per epoch, and seconds to translate
    a sentence (``seconds_per_sentence``). The tokenizers trained on the way
    are saved in ``run_dir``, where the run finds them."""
    data = prepare_data(config, run_dir)
    with process_settings_kept():
        configure_torch(config)
        return _time_updates(config, data, device)


def _time_updates(
    config: Config, data: PreparedData, device: torch.device
) -> tuple[float, int, float]:
    family = family_of(config.model)
    tokenizers = data.tokenizers
    model = family.build(
        config.model, len(tokenizers.src), len(tokenizers.tgt), tokenizers
    )
    with tempfile.TemporaryDirectory() as scratch:
        no_pairs = EncodedPairs.from_examples([])
        training_data = replace(data, valid=no_pairs, valid_pairs=[])
        setup = TrainingSetup(
            config, model, training_data, device, Path(scratch), 0, 1, print
        )
        task = family.training_task(setup)
        trainer = Trainer(config, Path(scratch), model, task, device)
        batches = task.epoch_batches(0)
        times = []
        for batch in batches[:6]:
            began = time.perf_counter()
            trainer.train_step([batch])
            if device.type == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - began)
    translator = family.inference(Trained(model, tokenizers, config, device), "fp32")
    per_sentence = seconds_per_sentence(translator, data.valid_pairs, tokenizers)
    return statistics.median(times[1:]), len(batches), per_sentence  # 1st: warm-up


def seconds_per_sentence(translator, pairs: list, tokenizers) -> float:
    """Seconds to translate one validation sentence: a sample of them, each
    made to run exactly as long as the median reference (a model a few
    updates old would otherwise stop at once or run to the limit)."""
    sample = pairs[:SAMPLE_SENTENCES]
    if not sample:
        return 0.0
    lengths = sorted(len(tokenizers.tgt.encode(target)) for _, target in sample)
    length = max(lengths[len(lengths) // 2], 1)
    options = SearchOptions(max_len_a=0.0, max_len_b=length, min_length=length)
    sources = [source for source, _ in sample]
    translator.translate(sources[:2], options)  # warm-up
    began = time.perf_counter()
    translator.translate(sources, options)
    return (time.perf_counter() - began) / len(sources)


def next_steps(run_dir: Path, config: Config) -> str:
    """The commands to try next, with the path of the ``rosetta`` executable."""
    executable = Path(sys.executable).parent / "rosetta"
    rosetta = str(executable) if executable.exists() else f"{sys.executable} -m rosetta"
    test = config.data.test
    source = test.src if test is not None and test.src is not None else "FILE"
    lines = [
        "",
        "Next:",
        f"  echo 'Zwei Hunde spielen im Schnee.' | {rosetta} translate -m {run_dir}",
        f"  {rosetta} translate -m {run_dir} -i {source} --beam 5 -o hyp.txt",
        f"  {rosetta} serve -m {run_dir}        # then open http://127.0.0.1:8000",
        f"  {rosetta} plot curves {run_dir} -o curves.png",
        f"  {rosetta} plot attention -m {run_dir} 'Ein Mann fährt Fahrrad.' "
        "-o attention.png",
    ]
    if executable.exists():
        lines.append(
            f"  (or put rosetta on your PATH: source {executable.parent}/activate)"
        )
    return "\n".join(lines)
