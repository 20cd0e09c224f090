"""Figures of a run or of a comparison, as PNG and SVG bytes.

matplotlib is imported only when a figure is drawn, on its own Agg canvas (never pyplot, never a
display). The figures are fed the analyses' results (``PlotInput``), never raw lines.

    from logscope.plots import PlotInput, run_plots, write_plots
    plots = run_plots(PlotInput.of(run, run.analyze()))
    write_plots(plots.plots, "figures/")      # figures/throughput.png, figures/throughput.svg, ...
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from logscope.plots.data import PlotInput

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class Plot:
    """One figure, drawn: ``name`` is its file stem, ``caption`` says what it shows."""

    name: str
    title: str
    caption: str
    png: bytes | None = None
    svg: bytes | None = None


@dataclass
class Plots:
    plots: list[Plot] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # title -> why it was not drawn


# name, title, caption
RUN_FIGURES: tuple[tuple[str, str, str], ...] = (
    (
        "throughput",
        "Throughput over time",
        "Generation and prompt throughput, running and waiting requests and KV cache usage per logging window; "
        "the stable decode segment shaded, disturbances (OOM, runtime compiles, preemptions, errors) marked.",
    ),
    (
        "prefill_chunks",
        "Prefill chunk series",
        "Input throughput of each chunk of each chunked prefill request: the rate falls as the context already "
        "in the cache grows, then restarts with the next request.",
    ),
    (
        "spec_acceptance",
        "Spec decode acceptance per draft position",
        "Share of drafts accepted at each draft position; the mean acceptance length is one plus their sum.",
    ),
    (
        "cold_start",
        "Cold-start waterfall",
        "The start-up phases on the log's clock, from the first timestamp to the ready line.",
    ),
    (
        "metrics_latency",
        "Latency percentiles (server metrics)",
        "P50, P95 and P99 of each latency histogram over each interval between two scrapes (thin lines: over the "
        "run), estimated from the buckets as Prometheus' histogram_quantile does.",
    ),
    (
        "metrics_load",
        "Running, waiting and KV usage (server metrics)",
        "The server's running and waiting requests and KV cache usage at each scrape, with the log's stats lines "
        "on the same clock where the two were aligned.",
    ),
)
# figures drawn only when the input holds what they show (not listed as "not drawn" otherwise)
OPTIONAL_FIGURES = {"metrics_latency": "metrics", "metrics_load": "metrics"}

COMPARE_FIGURES: tuple[tuple[str, str, str], ...] = (
    (
        "compare_decode",
        "Decode throughput, both runs",
        "Generation throughput of both runs from their first busy window, stable segments shaded, and the "
        "stable decode mean, median and peak side by side with the BASE / OTHER ratios.",
    ),
    (
        "compare_prefill",
        "Prefill, both runs",
        "Prefill chunk series of both runs (or their prefill rates where the engine prints no chunks).",
    ),
    (
        "compare_spec",
        "Spec decode acceptance, both runs",
        "Acceptance per draft position of both runs, with their mean acceptance lengths.",
    ),
    ("compare_cold_start", "Cold start, both runs", "The start-up phases of both runs side by side."),
)


Format = str  # "png" or "svg"
FORMATS: tuple[Format, ...] = ("png", "svg")


def _draw(
    name: str, title: str, caption: str, make: Callable[[], Figure], out: Plots, formats: tuple[Format, ...]
) -> None:
    from logscope.plots import _mpl
    from logscope.plots.run import Skip

    try:
        fig = make()
    except Skip as why:
        out.skipped[title] = str(why)
        return
    out.plots.append(
        Plot(
            name=name,
            title=title,
            caption=caption,
            png=_mpl.to_png(fig) if "png" in formats else None,
            svg=_mpl.to_svg(fig) if "svg" in formats else None,
        )
    )
    fig.clear()


def run_plots(inp: PlotInput, formats: tuple[Format, ...] = FORMATS) -> Plots:
    """Every figure of one run that its log supports, drawn in ``formats`` (each costs a rendering)."""
    from logscope.plots import metrics as mt
    from logscope.plots import run as r

    makers: dict[str, Callable[[PlotInput], Figure]] = {
        "throughput": r.throughput_timeline,
        "prefill_chunks": r.prefill_chunks,
        "spec_acceptance": r.spec_acceptance,
        "cold_start": r.cold_start_waterfall,
        "metrics_latency": mt.latency_percentiles,
        "metrics_load": mt.metrics_load,
    }
    out = Plots()
    for name, title, caption in RUN_FIGURES:
        if name in OPTIONAL_FIGURES and getattr(inp.report, OPTIONAL_FIGURES[name], None) is None:
            continue
        _draw(name, title, caption, lambda f=makers[name]: f(inp), out, formats)  # type: ignore[misc]
    return out


def compare_plots(
    base: PlotInput, other: PlotInput, comparison: Any, formats: tuple[Format, ...] = FORMATS
) -> Plots:
    """The overlays of two runs (``comparison`` is ``logscope.analyses.compare.Comparison``)."""
    from logscope.plots import compare as c

    makers: dict[str, Callable[[PlotInput, PlotInput, Any], Figure]] = {
        "compare_decode": c.decode_overlay,
        "compare_prefill": c.prefill_overlay,
        "compare_spec": c.spec_overlay,
        "compare_cold_start": c.cold_start_overlay,
    }
    out = Plots()
    for name, title, caption in COMPARE_FIGURES:
        _draw(name, title, caption, lambda f=makers[name]: f(base, other, comparison), out, formats)  # type: ignore[misc]
    return out


def write_plots(plots: list[Plot], directory: str | os.PathLike[str]) -> list[Path]:
    """Write each plot as ``NAME.png`` and ``NAME.svg`` (those drawn) into ``directory`` (created if missing)."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    for p in plots:
        for ext, data in (("png", p.png), ("svg", p.svg)):
            if data is None:
                continue
            path = d / f"{p.name}.{ext}"
            path.write_bytes(data)
            out.append(path)
    return out


__all__ = [
    "COMPARE_FIGURES",
    "OPTIONAL_FIGURES",
    "RUN_FIGURES",
    "Plot",
    "PlotInput",
    "Plots",
    "compare_plots",
    "run_plots",
    "write_plots",
]
