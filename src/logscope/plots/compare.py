"""Overlays of two runs (BASE and OTHER) for ``logscope compare``."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

from logscope.plots import _mpl as m
from logscope.plots.data import PlotInput
from logscope.plots.run import Skip, steps

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _busy_start(inp: PlotInput) -> float | None:
    s = inp.series
    if s is None:
        return None
    iv = s.interval_s or 10.0
    return next((w.t_s - iv for w in s.windows if w.running > 0), None)


def decode_overlay(base: PlotInput, other: PlotInput, comparison: Any) -> Figure:
    runs = [(base, m.RUN_COLOURS[0]), (other, m.RUN_COLOURS[1])]
    if all(r.series is None for r, _c in runs):
        raise Skip("neither run has decode-rate lines")
    span = 0.0
    for r, _c in runs:
        t0 = _busy_start(r)
        if r.series is not None and t0 is not None:
            span = max(span, r.series.windows[-1].t_s - t0)
    div, unit = m.time_scale(span)
    with m.style():
        fig = m.new_figure(11, 4.4)
        ax, bx = fig.subplots(1, 2, gridspec_kw={"width_ratios": [2.3, 1]})
        for r, colour in runs:
            t0 = _busy_start(r)
            if r.series is None or t0 is None:
                continue
            iv = r.series.interval_s or 10.0
            x, y = steps(r.series.windows, "gen_tok_s", iv)
            ax.plot(
                [(v - t0) / div for v in x],
                y,
                drawstyle="steps-pre",
                color=colour,
                lw=1.4,
                label=m.short(r.label, 40),
            )
            sd = r.report.stable_decode
            if sd is not None:
                a, b = (sd.start_t_s - (sd.window_s or 0.0) - t0) / div, (sd.end_t_s - t0) / div
                ax.axvspan(a, b, color=colour, alpha=0.12, lw=0)
                ax.plot(
                    [a, b],
                    [sd.mean_tok_s] * 2,
                    "--",
                    color=colour,
                    lw=1.2,
                    label=f"stable mean {sd.mean_tok_s:,.1f} tok/s at {sd.concurrency} running",
                )
        ax.set_xlabel(f"time since the run's first busy window ({unit})")
        ax.set_ylabel("generation tok/s")
        ax.set_ylim(bottom=0)
        ax.set_xlim(left=0)
        ax.legend(loc="upper right")
        ax.set_title("Generation throughput (stable segments shaded)", loc="left")

        names = ("mean", "median", "peak")
        attrs = ("mean_tok_s", "median_tok_s", "max_tok_s")
        width = 0.38
        for j, (r, colour) in enumerate(runs):
            sd = r.report.stable_decode
            vals = [getattr(sd, a) if sd is not None else 0.0 for a in attrs]
            bars = bx.bar(
                [i + (j - 0.5) * width for i in range(3)],
                vals,
                width=width,
                color=colour,
                label=m.short(r.label, 30),
            )
            bx.bar_label(bars, labels=[f"{v:,.0f}" if v else "n/a" for v in vals], fontsize=7.5, padding=2)
        deg = getattr(comparison, "degradation", None)
        ratios = [getattr(deg, k, None) for k in ("ratio_mean", "ratio_median", "ratio_peak")]
        top = max([getattr(r.report.stable_decode, "max_tok_s", 0.0) or 0.0 for r, _c in runs] + [1.0])
        for i, rv in enumerate(ratios):
            if rv is not None:
                bx.text(i, top * 1.16, f"{rv:.2f}x", ha="center", fontsize=9, fontweight="bold")
        bx.set_xticks(range(3), names)
        bx.set_ylim(0, top * 1.3)
        bx.set_ylabel("stable decode tok/s")
        bx.grid(axis="x", visible=False)
        bx.set_title("Stable decode (colours as on the left),\nratio BASE / OTHER on top", loc="left")
        fig.suptitle(
            f"Decode: {m.short(base.label, 40)} vs {m.short(other.label, 40)}",
            x=0.01,
            ha="left",
            fontweight="bold",
            fontsize=10,
        )
    return fig


def prefill_overlay(base: PlotInput, other: PlotInput, comparison: Any) -> Figure:
    runs = [(base, m.RUN_COLOURS[0]), (other, m.RUN_COLOURS[1])]
    pfs = [r.report.prefill for r, _c in runs]
    if all(p is None for p in pfs):
        raise Skip("neither run has prefill figures")
    chunked = any(p is not None and p.chunk_series for p in pfs)
    with m.style():
        fig = m.new_figure(9, 4.2)
        ax = fig.subplots()
        if chunked:
            # the run with the longer requests first, so that the shorter one's chunks stay visible on top
            order = sorted(
                zip(runs, pfs, ("o", "s"), strict=True),
                key=lambda x: -max((len(c.tok_s) for c in (x[1].chunk_series if x[1] else [])), default=0),
            )
            for (r, colour), p, marker in order:
                if p is None or not p.chunk_series:
                    continue
                for i, c in enumerate(p.chunk_series):
                    ax.plot(
                        range(1, len(c.tok_s) + 1),
                        c.tok_s,
                        "-",
                        marker=marker,
                        ms=4,
                        lw=1.2,
                        alpha=0.6,
                        color=colour,
                        label=f"{m.short(r.label, 30)}: {len(p.chunk_series)} requests, median "
                        f"change {p.chunk_decay_median_pct or 0:+.1f} %"
                        if i == 0
                        else None,
                    )
            ax.set_xlabel("chunk of the request")
            ax.set_ylabel("prefill input tok/s")
            ax.set_title("Prefill rate per chunk, each request a line", loc="left")
        else:
            names = ("mean", "median", "max")
            width = 0.38
            for j, ((r, colour), p) in enumerate(zip(runs, pfs, strict=True)):
                vals = [
                    getattr(p, a) if p is not None else 0.0
                    for a in ("mean_tok_s", "median_tok_s", "max_tok_s")
                ]
                bars = ax.bar(
                    [i + (j - 0.5) * width for i in range(3)],
                    vals,
                    width=width,
                    color=colour,
                    label=m.short(r.label, 40),
                )
                ax.bar_label(
                    bars, labels=[f"{v:,.0f}" if v else "n/a" for v in vals], fontsize=7.5, padding=2
                )
            ax.set_xticks(range(3), names)
            ax.set_ylabel("prefill tok/s")
            ax.grid(axis="x", visible=False)
            ax.set_title("Prefill throughput (no per-chunk lines in these logs)", loc="left")
        ax.set_ylim(0, ax.get_ylim()[1] * 1.2)
        ax.legend(loc="upper left", ncols=2)
    return fig


def spec_overlay(base: PlotInput, other: PlotInput, comparison: Any) -> Figure:
    runs = [(base, m.RUN_COLOURS[0]), (other, m.RUN_COLOURS[1])]
    sps = [r.report.spec_decode for r, _c in runs]
    if all(s is None for s in sps):
        raise Skip("neither run has speculative-decoding figures")
    with m.style():
        fig = m.new_figure(9, 4.2)
        ax = fig.subplots()
        if any(s is not None and s.per_position_acceptance for s in sps):
            k = max(len(s.per_position_acceptance or []) for s in sps if s is not None)
            width = 0.4
            for j, ((r, colour), s) in enumerate(zip(runs, sps, strict=True)):
                pp = (s.per_position_acceptance or []) if s is not None else []
                if not pp:
                    continue
                mal = (
                    f", acceptance length {s.mean_acceptance_length:.2f}"
                    if s and s.mean_acceptance_length
                    else ""
                )
                ax.bar(
                    [i + 1 + (j - 0.5) * width for i in range(len(pp))],
                    [p * 100 for p in pp],
                    width=width,
                    color=colour,
                    label=f"{m.short(r.label, 30)}{mal} ({s.verdict if s else ''})",
                )
            ax.set_xticks(range(1, k + 1))
            ax.set_xlabel("draft position")
            ax.set_ylabel("drafts accepted at this position (%)")
            ax.set_ylim(0, 100)
            ax.set_title("Acceptance per draft position", loc="left")
        else:
            fig.clear()
            ax, bx = fig.subplots(1, 2)
            for j, ((r, colour), s) in enumerate(zip(runs, sps, strict=True)):
                label = f"{m.short(r.label, 30)} ({s.verdict if s else 'no spec decode'})"
                for axis, value, fmt in (
                    (ax, s.mean_acceptance_length if s else None, "{:.2f}"),
                    (bx, s.acceptance_rate_pct if s else None, "{:.1f} %"),
                ):
                    bars = axis.bar([j], [value or 0.0], width=0.6, color=colour, label=label)
                    axis.bar_label(
                        bars,
                        labels=[fmt.format(value) if value is not None else "n/a"],
                        fontsize=8,
                        padding=2,
                    )
            drafts = max((s.draft_tokens or 0) for s in sps if s is not None)
            ax.set_ylim(0, (drafts + 1) if drafts else max(2.0, ax.get_ylim()[1] * 1.2))
            ax.axhline(1.0, color=m.GREY, lw=0.8, ls="--")
            ax.set_title(
                "Mean acceptance length (tokens per step;\n1 = nothing accepted"
                + (f", {drafts + 1} = all {drafts} drafts)" if drafts else ")"),
                loc="left",
                fontsize=9,
            )
            bx.set_ylim(0, 100)
            bx.set_title("Acceptance rate (% of drafted tokens)", loc="left", fontsize=9)
            for axis in (ax, bx):
                axis.set_xticks([0, 1], [m.short(r.label, 24) for r, _c in runs])
                axis.grid(axis="x", visible=False)
            fig.suptitle("Speculative decoding", x=0.01, ha="left", fontweight="bold", fontsize=10)
        ax.legend(loc="upper right")
    return fig


def cold_start_overlay(base: PlotInput, other: PlotInput, comparison: Any) -> Figure:
    runs = [(base, m.RUN_COLOURS[0]), (other, m.RUN_COLOURS[1])]
    css = [r.report.cold_start for r, _c in runs]
    if all(c is None for c in css):
        raise Skip("neither run has cold-start figures")
    names: list[str] = []
    for c in css:
        for p in c.phases if c is not None else []:
            if p.seconds is not None and p.name not in names:
                names.append(p.name)
    names.insert(0, "total: start -> ready")
    height = 0.38
    with m.style():
        fig = m.new_figure(10, 1.4 + 0.5 * len(names))
        ax = fig.subplots()
        top = 1.0
        for j, ((r, colour), c) in enumerate(zip(runs, css, strict=True)):
            vals: list[float | None] = []
            for n in names:
                if c is None:
                    vals.append(None)
                elif n.startswith("total"):
                    vals.append(c.total_s)
                else:
                    vals.append(next((p.seconds for p in c.phases if p.name == n), None))
            ys = [i + (j - 0.5) * height for i in range(len(names))]
            bars = ax.barh(
                ys, [v or 0.0 for v in vals], height=height, color=colour, label=m.short(r.label, 40)
            )
            ax.bar_label(
                bars,
                labels=[f"{v:,.1f} s" if v is not None else "n/a" for v in vals],
                fontsize=7.5,
                padding=2,
            )
            top = max([top] + [v for v in vals if v is not None])
        ax.set_yticks(range(len(names)), [textwrap.fill(m.short(n, 80), 34) for n in names])
        ax.invert_yaxis()
        ax.set_xlim(0, top * 1.18)
        ax.set_xlabel("seconds")
        ax.grid(axis="y", visible=False)
        ax.legend(loc="lower right")
        ax.set_title(
            "Cold-start phases, BASE and OTHER (phases can nest: engine init includes several)", loc="left"
        )
    return fig
