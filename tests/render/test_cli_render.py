"""``analyze --format markdown|html|json -o --plots`` and ``compare`` through click's CliRunner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscope.cli import main
from logscope.render.markdown import render_markdown
from tests.conftest import ROOT
from tests.render.cases import CASES, case_path, loaded

BASE, OTHER = case_path(CASES[-2] if len(CASES) > 1 else CASES[0]), case_path(CASES[-1])


def run(*args: str) -> object:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def tree(d: Path) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*")}


def test_analyze_markdown_to_stdout_is_the_renderer_output() -> None:
    old = os.getcwd()
    os.chdir(ROOT)
    try:
        r = CliRunner().invoke(main, ["analyze", case_path(CASES[0]), "--format", "markdown"])
    finally:
        os.chdir(old)
    assert r.exit_code == 0, r.output
    _run, report = loaded(CASES[0])
    assert r.stdout == render_markdown(report)


def test_analyze_writes_only_output_and_plots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = ROOT / case_path(CASES[-1])
    runner = CliRunner()
    here = tmp_path / "work"
    here.mkdir()
    monkeypatch.chdir(here)
    before = tree(here)
    r = runner.invoke(
        main, ["analyze", str(log), "--format", "html", "-o", "out/report.html", "--plots", "figs"]
    )
    assert r.exit_code == 3 and r.output.startswith("logscope: out/report.html: cannot be written")
    assert tree(here) == before  # checked before any work: nothing written
    (here / "out").mkdir()
    r = runner.invoke(
        main, ["analyze", str(log), "--format", "html", "-o", "out/report.html", "--plots", "figs"]
    )
    assert r.exit_code == 0, r.output
    made = tree(here) - before
    figs = {p for p in made if p.startswith("figs/")}
    assert made - figs == {"out", "out/report.html", "figs"}
    names = {Path(p).stem for p in figs if "." in p}
    assert {"throughput", "cold_start"} <= names
    assert all((here / "figs" / f"{n}.png").exists() and (here / "figs" / f"{n}.svg").exists() for n in names)
    assert f"wrote {len(names)} figure(s) to figs" in r.stderr
    html = (here / "out/report.html").read_text()
    assert html.count("<img ") == len(names) and r.stdout == ""
    (here / "afile").write_text("x")
    r = runner.invoke(main, ["analyze", str(log), "--plots", "afile"])
    assert r.exit_code == 3 and "is a file" in r.output


def test_analyze_json_and_text() -> None:
    r = run("analyze", str(ROOT / case_path(CASES[0])), "--format", "json")
    data = json.loads(r.stdout)  # type: ignore[attr-defined]
    assert data["findings"] and data["stable_decode"] is not None or data["not_applicable"]
    r = run("analyze", str(ROOT / case_path(CASES[0])))
    assert "Summary" in r.stdout and "Findings" in r.stdout  # type: ignore[attr-defined]


def test_text_to_a_file_has_no_colour(tmp_path: Path) -> None:
    out = tmp_path / "report.txt"
    run("analyze", str(ROOT / case_path(CASES[0])), "-o", str(out))
    text = out.read_text()
    assert "\x1b[" not in text and text.startswith("logscope report: ")


@pytest.mark.parametrize("fmt", ["text", "markdown", "json", "html"])
def test_compare_formats(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / f"cmp.{fmt}"
    r = CliRunner().invoke(
        main,
        [
            "compare",
            str(ROOT / BASE),
            str(ROOT / OTHER),
            "--label",
            "64K",
            "--label",
            "200K",
            "--format",
            fmt,
            "-o",
            str(out),
            "--shadow",
        ],
    )  # report only: exit 0 whatever the verdict
    assert r.exit_code == 0, r.output
    text = out.read_text()
    if fmt == "json":
        data = json.loads(text)
        assert data["labels"] == ["64K", "200K"] and "degradation" in data
    else:
        assert "64K" in text and "200K" in text
    if fmt == "html":
        assert text.count("<img ") >= 2


def test_compare_plots_and_labels(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        main, ["compare", str(ROOT / BASE), str(ROOT / OTHER), "--plots", str(tmp_path / "p")]
    )
    assert r.exit_code == 1, (
        r.output
    )  # INCONCLUSIVE: decode is faster in OTHER (PASS), the prefill rate undecided
    stems = {p.stem for p in (tmp_path / "p").iterdir()}
    assert {"compare_decode", "compare_cold_start"} <= stems
    r = CliRunner().invoke(
        main, ["compare", str(ROOT / BASE), str(ROOT / OTHER), "--label", "a", "--label", "b", "--label", "c"]
    )
    assert r.exit_code == 3 and "at most twice" in r.output
    r = CliRunner().invoke(main, ["compare", str(ROOT / BASE), str(tmp_path / "missing.log")])
    assert r.exit_code == 3 and r.output.startswith("logscope: ") and "Traceback" not in r.output


def test_matplotlib_only_when_drawing() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from logscope.cli import main\n"
        f"r = CliRunner().invoke(main, ['analyze', {str(ROOT / case_path(CASES[0]))!r}, '--format', sys.argv[1]])\n"
        "assert r.exit_code == 0, r.output\n"
        "print('matplotlib' in sys.modules, 'matplotlib.pyplot' in sys.modules)\n"
    )
    for fmt, drawn in (("markdown", False), ("json", False), ("text", False), ("html", True)):
        out = subprocess.run(
            [sys.executable, "-c", code, fmt], capture_output=True, text=True, check=True, cwd=ROOT
        )
        assert out.stdout.split()[-2:] == [str(drawn), "False"], (fmt, out.stdout[-300:], out.stderr[-2000:])
