"""Report and comparison in the output formats of the command line: text (rich), markdown, json, html.

The CLI calls these; they write only to the given output file (or stdout) and, for ``--plots``, only
into the given directory.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from logscope.analyses.report import Report
from logscope.errors import LogscopeError

FORMATS = ("text", "markdown", "json", "html")
TERMINAL_WIDTH_IN_FILE = 110


def check_outputs(output: str | None, plots_dir: str | None) -> None:
    """Fail before any work when ``-o`` or ``--plots`` cannot be written (one clear sentence)."""
    if output:
        parent = os.path.dirname(os.path.abspath(output))
        if not os.path.isdir(parent):
            raise LogscopeError(
                f"{output}: cannot be written, the directory {os.path.dirname(output) or '.'} does not exist"
            )
        if os.path.isdir(output):
            raise LogscopeError(f"{output}: is a directory; -o takes a file name")
    if plots_dir and os.path.exists(plots_dir) and not os.path.isdir(plots_dir):
        raise LogscopeError(f"{plots_dir}: exists and is not a directory; --plots takes a directory")


def _write_plots(plots: Any, plots_dir: str) -> list[str]:
    from logscope.plots import write_plots

    try:
        return [os.fspath(p) for p in write_plots(plots.plots, plots_dir)]
    except OSError as exc:
        raise LogscopeError(f"{plots_dir}: the figures cannot be written ({exc.strerror or exc})") from exc


def wants_plots(fmt: str, plots_dir: str | None) -> bool:
    return fmt == "html" or plots_dir is not None


def _formats(fmt: str, plots_dir: str | None) -> tuple[str, ...]:
    return ("png", "svg") if plots_dir is not None else ("svg",)


def run_figures(run: Any, report: Report, fmt: str, plots_dir: str | None) -> tuple[Any, list[str]]:
    """(``Plots`` or None, files written to ``plots_dir``)."""
    if not wants_plots(fmt, plots_dir):
        return None, []
    from logscope.plots import PlotInput, run_plots

    plots = run_plots(PlotInput.of(run, report), _formats(fmt, plots_dir))
    written = _write_plots(plots, plots_dir) if plots_dir else []
    return plots, written


def compare_figures(
    run_a: Any, run_b: Any, comparison: Any, fmt: str, plots_dir: str | None
) -> tuple[Any, list[str]]:
    if not wants_plots(fmt, plots_dir):
        return None, []
    from logscope.analyses.report import build_report
    from logscope.plots import PlotInput, compare_plots

    rep_a, rep_b = comparison.reports("base"), comparison.reports("other")  # the reports compare made
    a = PlotInput.of(run_a, rep_a[0] if rep_a else build_report(run_a), comparison.base.label)
    b = PlotInput.of(run_b, rep_b[0] if rep_b else build_report(run_b), comparison.other.label)
    plots = compare_plots(a, b, comparison, _formats(fmt, plots_dir))
    written = _write_plots(plots, plots_dir) if plots_dir else []
    return plots, written


def report_text(report: Report, fmt: str, plots: Any = None) -> str:
    """The report as Markdown, JSON or HTML text."""
    if fmt == "markdown":
        from logscope.render.markdown import render_markdown

        return render_markdown(report, skipped_figures=None)
    if fmt == "json":
        from logscope.render.json_report import render_json

        return render_json(report) + "\n"
    if fmt == "html":
        from logscope.render.html import render_html

        return render_html(report, plots)
    if fmt == "br":
        from logscope.render.br import render_br

        return render_br(report)
    raise ValueError(f"no text form for format {fmt!r}")


def compare_text(comparison: Any, fmt: str, plots: Any = None) -> str:
    if fmt == "markdown":
        from logscope.render.markdown import render_compare_markdown

        return render_compare_markdown(comparison)
    if fmt == "json":
        from logscope.render.json_report import render_compare_json

        return render_compare_json(comparison) + "\n"
    if fmt == "html":
        from logscope.render.html import render_compare_html

        return render_compare_html(comparison, plots)
    if fmt == "br":
        from logscope.render.br import render_compare_br

        return render_compare_br(comparison)
    raise ValueError(f"no text form for format {fmt!r}")


def _emit(text: str | None, output: str | None, terminal: Any) -> None:
    try:
        _emit_unchecked(text, output, terminal)
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        raise LogscopeError(f"{output or 'stdout'}: cannot be written ({exc.strerror or exc})") from exc


def _emit_unchecked(text: str | None, output: str | None, terminal: Any) -> None:
    from rich.console import Console

    if text is None:
        if output:
            with open(output, "w", encoding="utf-8") as fh:
                terminal(Console(file=fh, width=TERMINAL_WIDTH_IN_FILE, color_system=None, soft_wrap=False))
        else:
            terminal(Console())
        return
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


def emit_report(report: Report, fmt: str, output: str | None, plots: Any = None) -> None:
    """Write the report in ``fmt`` to ``output`` (a file) or stdout."""
    from logscope.render.terminal import render_terminal

    text = None if fmt == "text" else report_text(report, fmt, plots)
    _emit(text, output, lambda con: render_terminal(report, con))


def emit_compare(comparison: Any, fmt: str, output: str | None, plots: Any = None) -> None:
    from logscope.render.terminal import render_compare_terminal

    text = None if fmt == "text" else compare_text(comparison, fmt, plots)
    _emit(text, output, lambda con: render_compare_terminal(comparison, con))
