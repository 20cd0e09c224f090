"""The terminal report on a fixed-width string console, and the progress bar (TTY only)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import logscope
from logscope.analyses.compare import compare
from logscope.parsers.framing import ReadStats
from logscope.render.progress import reading_progress
from logscope.render.terminal import render_compare_terminal, render_terminal
from tests.render.cases import CASES, loaded, poisoned_log


def console(width: int = 100) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=width, color_system=None, force_terminal=False, legacy_windows=False), buf


@pytest.mark.parametrize("name", CASES)
def test_terminal_report(name: str) -> None:
    _run, report = loaded(name)
    con, buf = console()
    render_terminal(report, con)
    out = buf.getvalue()
    assert out.startswith("logscope report: ")
    assert max(len(ln) for ln in out.splitlines()) <= 100
    for title in (
        "Summary",
        "Findings",
        "Stable decode",
        "Prefill",
        "Speculative decoding",
        "KV pool",
        "Cold start",
        "Disturbances",
    ):
        assert f"{title} " in out or f"{title}\n" in out
    for f in report.findings:
        assert f" {f.severity.upper()} " in out and f.code in out
    if report.stable_decode is not None:
        assert f"{report.stable_decode.concurrency} running" in out
    assert "Summarised" not in out


def test_log_text_is_not_rich_markup(tmp_path: Path) -> None:
    report = logscope.load(str(poisoned_log(tmp_path))).analyze()
    con, buf = console(300)
    render_terminal(report, con)
    out = buf.getvalue()
    assert "[bold red]rich[/bold red]" in out and "<script>" in out and "\u202e" not in out


def test_compare_on_the_terminal() -> None:
    a, _ = loaded(CASES[0])
    b, _ = loaded(CASES[-1])
    con, buf = console(120)
    render_compare_terminal(compare(a, b), con)
    out = buf.getvalue()
    assert out.startswith("logscope comparison: ") and "Decode degradation" in out and "Side by side" in out


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def _paths() -> list[str]:
    run, _ = loaded(CASES[0])
    from tests.conftest import ROOT

    return [str(ROOT / f) for f in run.files]


def test_progress_bar_on_a_terminal_only() -> None:
    stats: Any = ReadStats()
    tty = FakeTTY()
    with reading_progress(_paths(), stats, stream=tty, min_bytes=0, interval_s=0.01):
        logscope.load(_paths(), stats=stats)
    assert "reading" in tty.getvalue() and stats.bytes > 0
    pipe = io.StringIO()
    with reading_progress(_paths(), ReadStats(), stream=pipe, min_bytes=0):
        pass
    assert pipe.getvalue() == ""
    small = FakeTTY()
    with reading_progress(_paths(), ReadStats(), stream=small):  # below the size that needs a bar
        pass
    assert small.getvalue() == ""
