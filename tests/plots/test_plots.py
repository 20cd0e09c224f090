"""The figures: which ones a run supports, that they are valid PNG and SVG with nothing external in them,
and that odd inputs (a `$` in a label, an empty report, many disturbances) draw without error."""

from __future__ import annotations

import io
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from PIL import Image

from logscope.analyses.compare import compare
from logscope.analyses.prefill import ChunkSeries
from logscope.plots import (
    COMPARE_FIGURES,
    OPTIONAL_FIGURES,
    RUN_FIGURES,
    PlotInput,
    compare_plots,
    run_plots,
    write_plots,
)
from tests.conftest import ROOT
from tests.render.cases import CASES, loaded


def check_png(data: bytes | None) -> tuple[int, int]:
    assert data is not None and data[:8] == b"\x89PNG\r\n\x1a\n"
    img = Image.open(io.BytesIO(data))
    img.verify()
    w, h = Image.open(io.BytesIO(data)).size
    assert 600 <= w <= 2400 and 300 <= h <= 2400
    return w, h


def check_svg(data: bytes | None) -> None:
    assert data is not None
    root = ET.fromstring(data)
    assert root.tag.endswith("svg")
    text = data.decode()
    assert "<script" not in text and "<foreignObject" not in text
    hrefs = [v for el in root.iter() for k, v in el.attrib.items() if k.endswith("href")]
    assert all(h.startswith(("#", "data:")) for h in hrefs), hrefs


# one run of each engine (drawing is slow on small machines)
DRAWN = [n for n in ("vllm-64k", "sglang-200k") if n in CASES] or CASES[:1]
RICH = "vllm-64k" if "vllm-64k" in CASES else CASES[0]  # disturbances, spec decode per position


@pytest.mark.parametrize("name", DRAWN)
def test_run_figures(name: str) -> None:
    run, report = loaded(name)
    plots = run_plots(PlotInput.of(run, report))
    names = {p.name for p in plots.plots}
    # the metrics figures are neither drawn nor listed as not drawn without --metrics
    assert names | {t for t in plots.skipped} and len(plots.plots) + len(plots.skipped) == len(
        RUN_FIGURES
    ) - len(OPTIONAL_FIGURES)
    assert "throughput" in names and "cold_start" in names
    assert ("spec_acceptance" in names) == bool(
        report.spec_decode and report.spec_decode.per_position_acceptance
    )
    assert ("prefill_chunks" in names) == bool(report.prefill and report.prefill.chunk_series)
    for p in plots.plots:
        check_png(p.png)
        check_svg(p.svg)
    for why in plots.skipped.values():
        assert why and why[0].islower()


def test_only_the_formats_asked_for() -> None:
    run, report = loaded(CASES[0])
    plots = run_plots(PlotInput.of(run, report), ("svg",))
    assert plots.plots and all(p.png is None and p.svg for p in plots.plots)


def test_compare_figures(tmp_path: Path) -> None:
    a, ra = loaded(CASES[0])
    b, rb = loaded(CASES[-1])
    cmp = compare(a, b)
    plots = compare_plots(PlotInput.of(a, ra, "base"), PlotInput.of(b, rb, "other"), cmp)
    assert {p.name for p in plots.plots} == {n for n, _t, _c in COMPARE_FIGURES}
    written = write_plots(plots.plots, tmp_path / "figs")
    assert sorted(p.name for p in written) == sorted(
        f"{p.name}.{e}" for p in plots.plots for e in ("png", "svg")
    )
    for p in plots.plots:
        check_png(p.png)
        check_svg(p.svg)


def test_chunk_series_and_odd_labels() -> None:
    """A `$` (mathtext in matplotlib) in a file name, long labels, many chunked requests."""
    run, report = loaded(CASES[0])
    rep = report.model_copy(deep=True)
    if rep.prefill is None:
        pytest.skip("no prefill section to extend")
    series = [
        ChunkSeries(
            request=i + 1,
            file="x",
            start_line=i * 6,
            end_line=i * 6 + 5,
            chunks=6,
            new_tokens=196608,
            tok_s=[22265.0 - 20 * i, 21064.0, 19628.0, 18475.0, 17243.0, 16408.0],
            decay_pct=-26.3,
        )
        for i in range(30)
    ]
    rep.prefill = rep.prefill.model_copy(update={"chunk_series": series, "chunk_decay_median_pct": -26.3})
    inp = PlotInput.of(run, rep, label="$HOME/run_$x$ with a very long name that goes on and on.log")
    plots = run_plots(inp, ("png",))
    assert "prefill_chunks" in {p.name for p in plots.plots}


def test_empty_report_skips_every_figure() -> None:
    run, report = loaded(CASES[0])
    empty = report.model_copy(
        update={
            s: None
            for s in ("stable_decode", "prefill", "spec_decode", "kv_pool", "cold_start", "disturbances")
        }
    )
    inp = PlotInput.of(run, empty)
    inp.series = None
    plots = run_plots(inp)
    assert plots.plots == [] and len(plots.skipped) == len(RUN_FIGURES) - len(OPTIONAL_FIGURES)


def test_many_disturbances_draw_markers_only() -> None:
    run, report = loaded(RICH)
    rep = report.model_copy(deep=True)
    if rep.disturbances is None or not rep.disturbances.timeline:
        pytest.skip("no disturbances in this run")
    rep.disturbances = rep.disturbances.model_copy(update={"timeline": rep.disturbances.timeline * 100})
    plots = run_plots(PlotInput.of(run, rep), ("png",))
    assert "throughput" in {p.name for p in plots.plots}


def test_no_pyplot_and_agg_only() -> None:
    code = (
        "import sys\n"
        "from tests.render.cases import CASES, loaded\n"
        "from logscope.plots import PlotInput, run_plots\n"
        "run, rep = loaded(CASES[0])\n"
        "assert 'matplotlib' not in sys.modules\n"
        "run_plots(PlotInput.of(run, rep), ('png',))\n"
        "import matplotlib\n"
        "print('matplotlib.pyplot' in sys.modules, any(m.startswith(('matplotlib.backends.backend_qt',"
        " 'matplotlib.backends.backend_tk', 'matplotlib.backends.backend_gtk')) for m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["False", "False"], out.stderr[-2000:]


def test_metrics_figures_on_a_real_scrape_series() -> None:
    """fixtures/metrics: the c6 recapture's 1 s scrapes, aligned with its log (latency and load figures)."""
    from logscope.api import load

    here = ROOT / "fixtures" / "metrics"
    run = load([str(here / "vllm-c6-metrics-1s.log")])
    report = run.analyze(metrics=[str(here / "vllm-c6-metrics-1s.scrapes.txt.xz")])
    assert report.metrics is not None and report.metrics.cross_check is not None
    assert report.metrics.cross_check.log_start_unix is not None  # the log's t_s = 0 on the scrapes' clock
    plots = run_plots(PlotInput.of(run, report))
    drawn = {p.name: p for p in plots.plots}
    assert {"metrics_latency", "metrics_load"} <= set(drawn)
    for name in ("metrics_latency", "metrics_load"):
        check_png(drawn[name].png)
        check_svg(drawn[name].svg)
    svg = (drawn["metrics_load"].svg or b"").decode()
    assert "log stats lines" in svg and "339 scrapes" in svg  # the log's points on the metrics' clock
    # a single scrape has no interval: no latency figure, and it says why
    one = run.analyze(metrics=[str(here / "vllm-c6-metrics-1s.metrics.txt")])
    skipped = run_plots(PlotInput.of(run, one), formats=("png",)).skipped
    assert "no latency histogram" in skipped["Latency percentiles (server metrics)"]
