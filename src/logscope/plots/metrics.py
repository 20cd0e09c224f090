"""The figures of the server's metrics (``--metrics``): latency percentiles per scrape interval, and the
running / waiting / KV usage gauges with the log's own stats lines on the same clock.

Drawn only when the report has a ``metrics`` section. The time axis is the log's (seconds since its
first timestamp) when the metrics' cross-check aligned the two clocks, else seconds since the first
scrape; the caption on each figure says which.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from logscope.plots import _mpl as m
from logscope.plots.data import PlotInput
from logscope.plots.run import Skip

if TYPE_CHECKING:
    from matplotlib.figure import Figure

LATENCIES = (
    ("ttft_s", "TTFT"),
    ("itl_s", "inter-token latency"),
    ("tpot_s", "TPOT"),
    ("e2e_s", "end-to-end"),
    ("queue_s", "queue time"),
)
QUANTILE_STYLE = (("p50", "P50", m.BLUE, "-"), ("p95", "P95", m.ORANGE, "--"), ("p99", "P99", m.RED, ":"))


def _clock(metrics: Any) -> tuple[float, str]:
    """(unix seconds of x = 0, what x counts from)."""
    cc = metrics.cross_check
    if cc is not None and cc.log_start_unix is not None:
        return float(cc.log_start_unix), "the log's first timestamp"
    return float(metrics.first_scrape or 0.0), "the first scrape"


def latency_percentiles(inp: PlotInput) -> Figure:
    mt = inp.report.metrics
    if mt is None:
        raise Skip("no server metrics (--metrics)")
    shown = [
        (role, label, mt.histograms[role])
        for role, label in LATENCIES
        if role in mt.histograms and mt.histograms[role].intervals
    ]
    if not shown:
        raise Skip("the scrapes hold no latency histogram with observations between two scrapes")
    zero, origin = _clock(mt)
    ends = [iv.end - zero for _r, _l, h in shown for iv in h.intervals]
    starts = [iv.start - zero for _r, _l, h in shown for iv in h.intervals]
    div, unit = m.time_scale(max(ends) - min(starts))
    with m.style():
        fig = m.new_figure(10, 1.2 + 2.0 * len(shown))
        axes_any = fig.subplots(len(shown), 1, sharex=True, squeeze=False)
        handles: list[Any] = []
        for k, (_role, label, h) in enumerate(shown):
            ax = axes_any[k][0]
            seen: list[float] = []
            for q, qlabel, colour, ls in QUANTILE_STYLE:
                xs: list[float] = []
                ys: list[float] = []
                bounds: dict[str, tuple[list[float], list[float]]] = {"v": ([], []), "^": ([], [])}
                for iv in h.intervals:
                    v, mark = _value(iv, q)
                    xs += [(iv.start - zero) / div, (iv.end - zero) / div, (iv.end - zero) / div]
                    ys += [float("nan") if v is None else 1000.0 * v] * 2 + [
                        float("nan")
                    ]  # no line across gaps
                    if v is not None and mark:
                        bounds[mark][0].append((iv.start + iv.end) / 2 - zero)
                        bounds[mark][1].append(1000.0 * v)
                (line,) = ax.plot(xs, ys, color=colour, ls=ls, lw=1.6, label=f"{qlabel} per scrape interval")
                for mark, (bx, by) in bounds.items():
                    if bx:
                        ax.plot([x / div for x in bx], by, mark, color=colour, ms=4, mfc="white", mew=0.9)
                over, _mark = _value(h.over_run, q)
                if over is not None:
                    ax.axhline(1000.0 * over, color=colour, ls=ls, lw=0.8, alpha=0.45)
                    seen.append(1000.0 * over)
                seen += [y for y in ys if y == y and y > 0]
                if k == 0:
                    handles.append(line)
            if seen and max(seen) > 30 * max(min(seen), 1e-3):
                ax.set_yscale("log")  # a preempted request's gap of seconds beside the usual tens of ms
            else:
                ax.set_ylim(bottom=0)
            run_q = h.over_run
            ax.set_ylabel(f"{label}\n(ms)")
            note = (
                f"{m.short(h.family, 50)}: {run_q.count:,} observations; over the run P50/P95/P99 "
                + "/".join(
                    "n/a" if v is None else f"{1000.0 * v:,.0f}" for v in (run_q.p50, run_q.p95, run_q.p99)
                )
                + " ms"
            )
            if run_q.in_first_bucket or run_q.in_inf_bucket:
                note += (
                    " (" + ", ".join(run_q.in_first_bucket + run_q.in_inf_bucket) + " only a bucket bound)"
                )
            ax.text(
                0.0, 1.0, note, transform=ax.transAxes, ha="left", va="bottom", fontsize=7.5, color=m.GREY
            )
        axes_any[-1][0].set_xlabel(f"time since {origin} ({unit})")
        fig.suptitle(
            f"Latency percentiles from the server's histograms: {m.short(inp.label, 50)}",
            x=0.01,
            ha="left",
            fontweight="bold",
            fontsize=10,
        )
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], color=m.GREY, lw=0.8, alpha=0.6, label="over the run (thin line)"))
        handles.append(
            Line2D([], [], color=m.GREY, marker="v", ls="", mfc="white", label="≤ the lowest bucket's bound")
        )
        handles.append(
            Line2D([], [], color=m.GREY, marker="^", ls="", mfc="white", label="≥ the highest finite bound")
        )
        fig.legend(handles=handles, loc="outside lower center", ncols=3)
    return fig


def _value(q: Any, name: str) -> tuple[float | None, str]:
    """A quantile to draw and its marker: in the lowest bucket the bucket's bound ("v": at most), in +Inf the
    highest finite bound ("^": at least), else the interpolated value ("")."""
    v = getattr(q, name)
    if v is None:
        return None, ""
    if name in q.in_first_bucket and q.first_bucket_s is not None:
        return float(q.first_bucket_s), "v"
    if name in q.in_inf_bucket:
        return float(v), "^"
    return float(v), ""


def metrics_load(inp: PlotInput) -> Figure:
    mt = inp.report.metrics
    if mt is None:
        raise Skip("no server metrics (--metrics)")
    run, wait, kv = (mt.gauges.get(k) for k in ("running", "waiting", "kv_usage_pct"))
    if run is None and wait is None and kv is None:
        raise Skip("the scrapes hold no running, waiting or KV-usage gauge")
    zero, origin = _clock(mt)
    times = [t - zero for g in (run, wait, kv) if g is not None for t, _v in g.series]
    div, unit = m.time_scale(max(times) - min(times) if times else 1.0)
    aligned = origin.startswith("the log")
    wins = inp.series.windows if inp.series is not None and aligned else []
    from matplotlib.ticker import MaxNLocator

    panels = (1 if run is not None or wait is not None else 0) + (1 if kv is not None else 0)
    with m.style():
        fig = m.new_figure(10, 1.4 + 2.1 * panels)
        axes_any = fig.subplots(panels, 1, sharex=True, squeeze=False)
        axes = [a[0] for a in axes_any]
        handles: list[Any] = []
        k = 0
        if run is not None or wait is not None:
            ax = axes[k]
            k += 1
            for g, label, colour, ls in ((run, "running", m.GREEN, "-"), (wait, "waiting", m.PURPLE, "-.")):
                if g is None:
                    continue
                (h,) = ax.plot(
                    [(t - zero) / div for t, _v in g.series],
                    [v for _t, v in g.series],
                    color=colour,
                    ls=ls,
                    lw=1.3,
                    label=f"{label} (metrics, {len(g.series)} scrapes)",
                )
                handles.append(h)
            if wins:
                (h,) = ax.plot(
                    [w.t_s / div for w in wins],
                    [w.running for w in wins],
                    "o",
                    color=m.GREEN,
                    ms=3.5,
                    mfc="white",
                    label="running (log stats lines)",
                )
                handles.append(h)
                wt = [(w.t_s, w.waiting) for w in wins if w.waiting is not None]
                if wt:
                    (h,) = ax.plot(
                        [t / div for t, _v in wt],
                        [v for _t, v in wt],
                        "s",
                        color=m.PURPLE,
                        ms=3.5,
                        mfc="white",
                        label="waiting (log stats lines)",
                    )
                    handles.append(h)
            ax.set_ylabel("requests")
            ax.set_ylim(bottom=0)
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        if kv is not None:
            ax = axes[k]
            (h,) = ax.plot(
                [(t - zero) / div for t, _v in kv.series],
                [v for _t, v in kv.series],
                color=m.BLACK,
                lw=1.2,
                label="KV cache usage % (metrics)",
            )
            handles.append(h)
            lk = [(w.t_s, w.kv_usage_pct) for w in wins if w.kv_usage_pct is not None]
            if lk:
                (h,) = ax.plot(
                    [t / div for t, _v in lk],
                    [v for _t, v in lk],
                    "D",
                    color=m.BLACK,
                    ms=3,
                    mfc="white",
                    label="KV cache usage % (log stats lines)",
                )
                handles.append(h)
            ax.set_ylabel("KV usage\n%")
            ax.set_ylim(0, 100 if kv.max > 50 else max(5.0, kv.max * 1.25))
        axes[-1].set_xlabel(f"time since {origin} ({unit})")
        note = (
            "the log's stats lines placed by the metrics' clock alignment"
            if aligned
            else "not aligned with a log (give --log / analyze the log)"
        )
        axes[0].set_title(
            f"Running, waiting and KV usage from the server's gauges: {m.short(inp.label, 40)}",
            loc="left",
            pad=14,
        )
        axes[0].text(
            1.0, 1.0, note, transform=axes[0].transAxes, ha="right", va="bottom", fontsize=7.5, color=m.GREY
        )
        fig.legend(handles=handles, loc="outside lower center", ncols=min(3, len(handles)))
    return fig
