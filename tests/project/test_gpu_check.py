"""``benchmarks/gpu_check.py`` as the GPU machine starts it: its own process
with nothing but the standard library (no Rosetta, no carried package), every
stage and each stage's summary in a process of the stage's own.

The parent side runs here as the Makefile runs it, under ``-E -S`` (no
site-packages, no ``PYTHONPATH``); the stages' interpreter is this one (the
virtual environment, with Rosetta and pydantic).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pydantic
from benchmarks.gpu_check_summaries import SUMMARIES

from tests.support.paths import ROOT

BARE = [sys.executable, "-E", "-S"]
# what the parent's code sees: the benchmarks, not the repository's packages
PRELUDE = f"import json, sys\nsys.path.insert(0, {str(ROOT / 'benchmarks')!r})\n"


def bare(code: str) -> dict:
    """What ``code``, run in a bare parent process, prints as its last line."""
    done = subprocess.run(
        [*BARE, "-c", PRELUDE + textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_bare_parent_has_neither_rosetta_nor_the_carried_packages():
    """Else the tests below would pass with a parent that imports them."""
    found = bare(
        """
        import importlib.util
        names = ["rosetta", "pydantic", "fastapi"]
        print(json.dumps({n: importlib.util.find_spec(n) is not None for n in names}))
        """
    )
    assert found == {"rosetta": False, "pydantic": False, "fastapi": False}


def test_the_check_starts_in_a_bare_parent():
    done = subprocess.run(
        [*BARE, "benchmarks/gpu_check.py", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "--python" in done.stdout


def test_the_parent_imports_only_the_standard_library():
    imported = bare(
        """
        before = set(sys.modules)
        import gpu_check
        names = {name.partition(".")[0] for name in set(sys.modules) - before}
        print(json.dumps(sorted(names - set(sys.stdlib_module_names))))
        """
    )
    assert imported == ["gpu_check", "gpu_check_stages"]


def test_a_stage_summary_is_computed_in_the_stages_process():
    """A summary that needs a package only the stages have (pydantic), as the
    language model's does, with a parent that cannot import it."""
    record = bare(
        f"""
        import os
        from gpu_check import run_stage
        from gpu_check_stages import Stage
        python = {sys.executable!r}
        summary = "import json, pydantic; print(json.dumps({{'headline': "
        summary += "pydantic.VERSION, 'pid': os.getpid()}}))"
        stage = Stage(
            "probe",
            [[python, "-c", "print('| a |')"]],
            seconds=60,
            least_seconds=1,
            summary=[python, "-c", "import os; " + summary],
        )
        record = run_stage(stage, dict(os.environ), 60, lambda text: None)
        print(json.dumps(record | {{"parent": os.getpid()}}))
        """
    )
    assert record["status"] == "passed"
    assert record["headline"] == pydantic.VERSION
    assert record["pid"] != record["parent"]


def test_a_failed_summary_fails_a_passed_stage():
    record = bare(
        f"""
        import os
        from gpu_check import run_stage
        from gpu_check_stages import Stage
        python = {sys.executable!r}
        stage = Stage(
            "probe",
            [[python, "-c", "pass"]],
            seconds=60,
            least_seconds=1,
            summary=[python, "-c", "raise ValueError('no validation')"],
        )
        print(json.dumps(run_stage(stage, dict(os.environ), 60, lambda text: None)))
        """
    )
    assert record["status"] == "passed, its summary failed"
    assert record["summary_error"] == "ValueError: no validation"


def test_the_stages_run_with_the_stages_interpreter(tmp_path):
    """Every command and every summary, on both machines' sizes; and every
    summary names one that the summary script knows."""
    for device in ("cuda", "cpu"):
        stages = bare(
            f"""
            from pathlib import Path
            from gpu_check_stages import SIZES, stages_for
            stages = stages_for(
                {device!r}, SIZES[{device!r}], Path({str(tmp_path)!r}), None,
                "/the/stages/python",
            )
            print(json.dumps([[s.name, s.commands, s.summary] for s in stages]))
            """
        )
        assert len(stages) == 6
        for name, commands, summary in stages:
            for command in commands:
                assert "/the/stages/python" in command, (name, command)
            if summary is not None:
                assert summary[0] == "/the/stages/python"
                assert summary[1].endswith("gpu_check_summaries.py")
                assert summary[2] == name
    named = {name for name, _, summary in stages if summary is not None}
    assert named == set(SUMMARIES)


def test_the_gpu_limits_fit_the_nine_minutes():
    """Every stage at its limit, with the parent's own half minute (wheels,
    the GPU's name, the summaries): within ``make gpu-check``'s nine."""
    seconds = bare(
        """
        from gpu_check_stages import SIZES
        print(json.dumps(SIZES["cuda"].seconds))
        """
    )
    assert set(seconds) == {"tests", "train", "teacher", "decode", "lm", "nat"}
    assert sum(seconds.values()) + 30 <= 9 * 60


def test_the_summary_script_reads_a_junit_report(tmp_path):
    report = tmp_path / "tests.xml"
    report.write_text(
        '<testsuites><testsuite tests="3" failures="1" errors="0" skipped="1">'
        '<testcase classname="t" name="ok"/>'
        '<testcase classname="t" name="bad"><failure/></testcase>'
        '<testcase classname="t" name="gone"><skipped/></testcase>'
        "</testsuite></testsuites>"
    )
    done = subprocess.run(
        [sys.executable, "benchmarks/gpu_check_summaries.py", "tests", str(report)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    summary = json.loads(done.stdout)
    assert summary["headline"] == "1 passed, 1 failed, 1 skipped"
    assert summary["failed"] == ["t.bad"]
