"""``rosetta prepare | train | translate | evaluate | serve | plot``."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from rosetta.errors import RosettaError


def default_run_dir(config_path: str) -> Path:
    return Path("runs") / Path(config_path).stem


def cmd_prepare(args: argparse.Namespace) -> None:
    from rosetta.config import load_config
    from rosetta.train.prepare import prepare_data

    config = load_config(args.config, args.set)
    run_dir = Path(args.output or default_run_dir(args.config))
    prepare_data(config, run_dir)
    print(f"prepared: {run_dir}")


def cmd_train(args: argparse.Namespace) -> None:
    from rosetta.config import load_config
    from rosetta.train.run import run_training

    config = load_config(args.config, args.set)
    run_dir = Path(args.output or default_run_dir(args.config))
    run_training(config, run_dir, resume=args.resume)
    print(f"model: {run_dir}")


def read_input_lines(paths: list[str]) -> list[str]:
    from rosetta.data.corpus import read_lines

    if not paths or paths == ["-"]:
        data = sys.stdin.buffer.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise RosettaError(
                f"<stdin>: invalid UTF-8 at byte {error.start}"
            ) from None
        # Only "\n" (and "\r\n") ends a line: str.splitlines() would also split
        # on U+2028, form feeds and others, breaking one-output-per-input-line.
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return [line.removesuffix("\r") for line in lines]
    return [line for path in paths for _, line in read_lines(Path(path))]


def search_options(args: argparse.Namespace) -> dict[str, object]:
    """The search flags shared by ``translate`` and ``evaluate -m``."""
    return {
        "beam_size": args.beam,
        "alpha": args.alpha,
        "penalty": args.penalty,
        "stopping": args.stopping,
        "refill": args.refill,
        "max_len_a": args.max_len_a,
        "max_len_b": args.max_len_b,
        "sample": args.sample,
        "temperature": args.temperature,
        "top_k": args.top_k,
        "top_p": args.top_p,
        "seed": args.seed,
    }


def cmd_translate(args: argparse.Namespace) -> None:
    import json

    from rosetta.decode.batched import check_workers
    from rosetta.translator import Translator

    if args.format == "text" and (args.nbest > 1 or args.attention):
        raise RosettaError("--nbest and --attention need --format jsonl")
    translator = Translator.load(
        args.model, device=args.device, precision=args.precision
    )
    lines = read_input_lines(args.input)
    try:
        options = search_options(args) | {
            "nbest": args.nbest,
            "need_attention": args.attention,
        }
        search = translator.search_options(**options)  # validate before the work
        check_workers(args.workers, search, translator.device)
    except ValueError as error:
        raise RosettaError(f"translate: {error}") from None
    results = translator.translate_nbest(
        lines, batch_size=args.batch_size, workers=args.workers, **options
    )
    if args.format == "text":
        outputs = [found[0].text if found else "" for found in results]
    else:
        outputs = [
            json.dumps(
                {
                    "line": number,
                    "source": source,
                    "hypotheses": [t.to_dict() for t in found],
                },
                ensure_ascii=False,
            )
            for number, (source, found) in enumerate(
                zip(lines, results, strict=True), start=1
            )
        ]
    text = "".join(line + "\n" for line in outputs)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:  # bytes, so the locale's encoding can never fail on a translation
        sys.stdout.buffer.write(text.encode("utf-8"))
        sys.stdout.flush()


def cmd_evaluate(args: argparse.Namespace) -> None:
    from rosetta.evaluate.corpus import evaluate_all

    references = read_input_lines([args.ref])
    if args.model:
        from rosetta.translator import Translator

        if not args.src:
            raise RosettaError("--model needs --src, the sentences to translate")
        translator = Translator.load(
            args.model, device=args.device, precision=args.precision
        )
        options = search_options(args)
        try:
            translator.search_options(**options)  # validate before the work
        except ValueError as error:
            raise RosettaError(f"evaluate: {error}") from None
        hypotheses = translator.translate(read_input_lines([args.src]), **options)
    elif args.hyp:
        hypotheses = read_input_lines([args.hyp])
    else:
        raise RosettaError("give --hyp FILE, or --model MODEL with --src FILE")
    if len(hypotheses) != len(references):
        raise RosettaError(
            f"{len(hypotheses)} hypotheses but {args.ref} has {len(references)} lines"
        )
    for score in evaluate_all(hypotheses, references):
        print(score)


def cmd_serve(args: argparse.Namespace) -> None:
    import torch
    import uvicorn

    from rosetta.serve.app import create_app
    from rosetta.serve.schemas import ServerSettings
    from rosetta.translator import Translator

    if args.threads:
        torch.set_num_threads(args.threads)
    translator = Translator.load(
        args.model, device=args.device, precision=args.precision
    )
    settings = ServerSettings(
        max_body_bytes=args.max_body_bytes,
        max_sentences=args.max_sentences,
        max_chars=args.max_chars,
        max_beam=args.max_beam,
        batching=not args.no_batching,
        max_batch_tokens=args.max_batch_tokens,
        max_wait_ms=args.max_wait_ms,
        max_queue=args.max_queue,
        workers=args.workers,
    )
    try:
        app = create_app(translator, settings, model_name=Path(args.model).name)
    except ValueError as error:
        raise RosettaError(str(error)) from None
    print(f"serving {args.model} on http://{args.host}:{args.port}/", flush=True)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        timeout_graceful_shutdown=args.graceful_seconds,
    )


def cmd_plot(args: argparse.Namespace) -> None:
    from rosetta import plots

    if args.figure == "attention":
        from rosetta.translator import Translator

        translator = Translator.load(
            args.model, device=args.device, precision=args.precision
        )
        try:
            options = search_options(args) | {"need_attention": True}
            [found] = translator.translate_nbest([args.sentence], **options)
        except ValueError as error:
            raise RosettaError(f"plot attention: {error}") from None
        if not found:
            raise RosettaError("plot attention: the sentence is blank")
        written = plots.plot_attention(found[0], args.output, args.layer, args.head)
        print(f"{written}: {found[0].text}")
    elif args.figure == "positions":
        written = plots.plot_positional_encoding(
            args.output, args.d_model, args.length, args.dims
        )
        print(written)
    else:
        print(plots.plot_learning_curves(Path(args.run_dir), args.output))


def workers_count(text: str) -> int | str:
    """``--workers``: a whole number of at least 1, or ``auto``."""
    if text == "auto":
        return text
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number or 'auto', got {text!r}"
        ) from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {count}")
    return count


def add_precision_flag(verb: argparse.ArgumentParser) -> None:
    from rosetta.precision import PRECISIONS

    verb.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="fp32",
        help="bf16: bfloat16 matrix products, faster where the hardware has them; "
        "int8: int8 linear layers (CPU)",
    )


def add_search_flags(verb: argparse.ArgumentParser) -> None:
    group = verb.add_argument_group("search")
    group.add_argument("--beam", type=int, default=1, help="beam size (1: greedy)")
    group.add_argument(
        "--alpha", type=float, default=0.75, help="length normalisation exponent"
    )
    group.add_argument(
        "--penalty",
        choices=["notes", "gnmt"],
        default="notes",
        help="divide Σ log P by L^α (notes) or ((5+L)/6)^α (gnmt)",
    )
    group.add_argument(
        "--stopping",
        choices=["exact", "k_finished", "max_length"],
        default="exact",
        help="when a sentence's beam search ends",
    )
    group.add_argument(
        "--refill",
        action="store_true",
        help="keep beam-size live prefixes: ended candidates leave the beam and "
        "the next best expansions take their places (fairseq, Hugging Face, "
        "CTranslate2); without it the beam holds the k best expansions, ended "
        "or not (the notes' beam)",
    )
    group.add_argument("--max-len-a", type=float, default=None, help="limit a·S + b")
    group.add_argument("--max-len-b", type=int, default=None)
    group.add_argument("--sample", action="store_true", help="sample instead")
    group.add_argument("--temperature", type=float, default=1.0)
    group.add_argument("--top-k", type=int, default=0, help="sampling: k best only")
    group.add_argument(
        "--top-p", type=float, default=1.0, help="sampling: nucleus probability"
    )
    group.add_argument("--seed", type=int, default=None, help="sampling seed")


def build_parser() -> argparse.ArgumentParser:
    from rosetta.serve.schemas import ServerSettings

    parser = argparse.ArgumentParser(
        prog="rosetta", description="Sequence-to-sequence learning for translation."
    )
    verbs = parser.add_subparsers(dest="verb", required=True)

    def config_verb(name: str, help_text: str) -> argparse.ArgumentParser:
        verb = verbs.add_parser(name, help=help_text)
        verb.add_argument("config", help="YAML configuration file")
        verb.add_argument(
            "-o", "--output", help="run folder (default runs/CONFIG_NAME)"
        )
        verb.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="override a config value, e.g. train.lr=3e-4",
        )
        return verb

    prepare = config_verb("prepare", "read the corpora and train the tokenizers")
    prepare.set_defaults(run=cmd_prepare)
    train = config_verb("train", "train a model")
    train.add_argument(
        "--resume",
        action="store_true",
        help="continue from the run folder's latest checkpoint",
    )
    train.set_defaults(run=cmd_train)

    translate = verbs.add_parser("translate", help="translate text, one line per line")
    translate.add_argument(
        "-m", "--model", required=True, help="run folder or checkpoint folder"
    )
    translate.add_argument(
        "-i",
        "--input",
        nargs="*",
        default=[],
        help="input files (default: standard input)",
    )
    translate.add_argument("-o", "--output", help="output file (default: stdout)")
    add_search_flags(translate)
    translate.add_argument("--nbest", type=int, default=1, help="hypotheses per line")
    translate.add_argument(
        "--format",
        choices=["text", "jsonl"],
        default="text",
        help="text: the best translation per line; jsonl: one JSON object per "
        "line with the n-best hypotheses, scores, tokens and ids",
    )
    translate.add_argument(
        "--attention",
        action="store_true",
        help="jsonl: add the best hypotheses' attention weights",
    )
    translate.add_argument("--batch-size", type=int, default=None)
    translate.add_argument(
        "--workers",
        type=workers_count,
        default="auto",
        help="CPU: decode this many batches at once, sharing the threads; "
        "auto (default): one per thread, one when sampling or on a GPU",
    )
    translate.add_argument("--device", default=None, help="cpu, cuda (default: auto)")
    add_precision_flag(translate)
    translate.set_defaults(run=cmd_translate)

    evaluate = verbs.add_parser(
        "evaluate", help="score translations against references"
    )
    evaluate.add_argument("--hyp", help="translations, one per line")
    evaluate.add_argument("--ref", required=True, help="references, one per line")
    evaluate.add_argument("-m", "--model", help="translate --src with this model first")
    evaluate.add_argument("--src", help="source sentences (with --model)")
    add_search_flags(evaluate)
    evaluate.add_argument("--device", default=None)
    add_precision_flag(evaluate)
    evaluate.set_defaults(run=cmd_evaluate)

    serve = verbs.add_parser(
        "serve", help="HTTP API and web page (POST /translate, GET /)"
    )
    serve.add_argument("-m", "--model", required=True, help="run or checkpoint folder")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--device", default=None, help="cpu, cuda (default: auto)")
    add_precision_flag(serve)
    serve.add_argument(
        "--threads", type=int, default=0, help="CPU threads (0: torch's default)"
    )
    defaults = ServerSettings()
    limits = serve.add_argument_group("limits (answered with 4xx)")
    limits.add_argument("--max-body-bytes", type=int, default=defaults.max_body_bytes)
    limits.add_argument("--max-sentences", type=int, default=defaults.max_sentences)
    limits.add_argument(
        "--max-chars", type=int, default=defaults.max_chars, help="per sentence"
    )
    limits.add_argument("--max-beam", type=int, default=defaults.max_beam)
    limits.add_argument(
        "--max-queue",
        type=int,
        default=defaults.max_queue,
        help="sentences waiting before 503",
    )
    batching = serve.add_argument_group("dynamic batching")
    batching.add_argument(
        "--no-batching", action="store_true", help="run every request alone"
    )
    batching.add_argument(
        "--max-batch-tokens",
        type=int,
        default=defaults.max_batch_tokens,
        help="source tokens × beam in one model call",
    )
    batching.add_argument(
        "--max-wait-ms",
        type=float,
        default=defaults.max_wait_ms,
        help="how long a batch that is not full waits for more requests",
    )
    batching.add_argument(
        "--workers",
        type=int,
        default=defaults.workers,
        help="batches decoded at once on the CPU, each with threads / N",
    )
    serve.add_argument(
        "--graceful-seconds",
        type=int,
        default=30,
        help="on shutdown, how long requests in flight may take to finish",
    )
    serve.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"]
    )
    serve.set_defaults(run=cmd_serve)

    plot = verbs.add_parser("plot", help="draw attention, positions or learning curves")
    figures = plot.add_subparsers(dest="figure", required=True)
    attention = figures.add_parser(
        "attention", help="cross-attention of one translated sentence"
    )
    attention.add_argument("-m", "--model", required=True)
    attention.add_argument("sentence", help="the source sentence")
    attention.add_argument(
        "--layer", default="last", help="1-based layer, 'last' or 'all'"
    )
    attention.add_argument(
        "--head", default="mean", help="1-based head, 'mean' or 'all'"
    )
    attention.add_argument("--device", default=None)
    add_precision_flag(attention)
    add_search_flags(attention)
    positions = figures.add_parser(
        "positions", help="the sinusoidal positional encoding and its curves"
    )
    positions.add_argument("--d-model", type=int, default=64)
    positions.add_argument("--length", type=int, default=100, help="positions")
    positions.add_argument(
        "--dims", type=int, nargs="+", default=None, help="curves to draw (4 5 6 7)"
    )
    curves = figures.add_parser(
        "curves", help="loss, validation BLEU and learning rate of a training run"
    )
    curves.add_argument(
        "run_dir", metavar="RUN", help="run folder or its metrics.jsonl"
    )
    for figure in (attention, positions, curves):
        figure.add_argument(
            "-o", "--output", required=True, type=Path, help="file: .png, .svg, .pdf"
        )
    plot.set_defaults(run=cmd_plot)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    warnings.formatwarning = lambda message, category, *_: f"warning: {message}\n"
    try:
        args.run(args)
    except RosettaError as error:
        print(f"rosetta {args.verb}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
