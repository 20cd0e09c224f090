"""The figures of one run: throughput timeline, prefill chunk series, acceptance per draft position,
cold-start waterfall. Each function returns a matplotlib figure or raises ``Skip`` with the reason."""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Any

from logscope.plots import _mpl as m
from logscope.plots.data import EngineSeries, PlotInput, Window

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


class Skip(Exception):
    """The run lacks what a figure needs; the message says what."""


NAN = float("nan")

# disturbance kind -> (legend label, colour, marker)
DISTURBANCE_STYLE: dict[str, tuple[str, str, str]] = {
    "oom": ("OOM", m.RED, "v"),
    "compile": ("runtime compile", m.ORANGE, "D"),
    "preemption": ("preemption", m.PURPLE, "s"),
    "throughput": ("preemption", m.PURPLE, "s"),
    "retract": ("retraction", m.PURPLE, "^"),
    "error": ("error", m.BLACK, "X"),
}
MAX_LINES = 60  # more disturbances than this: markers only, no vertical lines


def steps(
    windows: list[Window], value: str, interval: float, div: float = 1.0
) -> tuple[list[float], list[float]]:
    """x, y for a ``steps-pre`` plot: each value held over its window, broken at idle gaps."""
    xs: list[float] = []
    ys: list[float] = []
    for i, w in enumerate(windows):
        v = getattr(w, value)
        if i == 0 or w.gap_before:
            xs.append((w.t_s - interval) / div)
            ys.append(NAN)
        xs.append(w.t_s / div)
        ys.append(NAN if v is None else float(v))
    return xs, ys


def _extent(inp: PlotInput, s: EngineSeries) -> tuple[float, float]:
    iv = s.interval_s or 10.0
    lo = s.windows[0].t_s - iv
    hi = s.windows[-1].t_s
    if inp.prefill_points:
        lo = min(lo, min(t for t, _v in inp.prefill_points) - 1.0)
        hi = max(hi, max(t for t, _v in inp.prefill_points))
    d = inp.report.disturbances
    if d is not None:
        ts = [e.t_s for e in d.timeline if e.t_s is not None and e.phase != "startup"]
        if ts:
            lo, hi = min(lo, min(ts)), max(hi, max(ts))
    pad = max((hi - lo) * 0.01, 1.0)
    return lo - pad, hi + pad


def _shade_stable(axes: list[Axes], inp: PlotInput, div: float) -> Any:
    sd = inp.report.stable_decode
    if sd is None:
        return None
    lead = sd.window_s or 0.0
    handle = None
    for ax in axes:
        handle = ax.axvspan(
            (sd.start_t_s - lead) / div,
            sd.end_t_s / div,
            color=m.SHADE,
            alpha=0.13,
            lw=0,
            label=f"stable segment: {sd.samples} windows at {sd.concurrency} running",
        )
    return handle


def _disturbances(
    axes: list[Axes], inp: PlotInput, lo: float, hi: float, div: float
) -> tuple[list[Any], int]:
    """Vertical lines (and a marker row on top) at each disturbance; (legend handles, not shown)."""
    from matplotlib.lines import Line2D

    d = inp.report.disturbances
    if d is None:
        return [], 0
    shown = [e for e in d.timeline if e.t_s is not None and lo <= e.t_s <= hi]
    hidden = sum(1 for e in d.timeline) - len(shown)
    counts: Counter[str] = Counter()
    for e in shown:
        counts[DISTURBANCE_STYLE.get(e.kind, (e.kind, m.GREY, "o"))[0]] += e.count
    top = axes[0]
    trans = top.get_xaxis_transform()
    for e in shown:
        label, colour, marker = DISTURBANCE_STYLE.get(e.kind, (e.kind, m.GREY, "o"))
        x = (e.t_s or 0.0) / div
        if len(shown) <= MAX_LINES:
            for ax in axes:
                ax.axvline(x, color=colour, lw=0.8, alpha=0.55, zorder=1)
        top.plot(
            [x], [1.0], marker=marker, color=colour, ms=6, transform=trans, clip_on=False, zorder=5, ls="none"
        )
    handles = []
    seen: set[str] = set()
    for _kind, (label, colour, marker) in DISTURBANCE_STYLE.items():
        if label in seen or label not in counts:
            continue
        seen.add(label)
        n = counts[label]
        handles.append(
            Line2D(
                [],
                [],
                color=colour,
                marker=marker,
                lw=0.8,
                ls="-" if len(shown) <= MAX_LINES else "none",
                label=f"{label} ({n} line{'s' if n != 1 else ''})",
            )
        )
    return handles, hidden


def throughput_timeline(inp: PlotInput) -> Figure:
    s = inp.series
    if s is None or not s.windows:
        raise Skip("no decode-rate lines (vLLM stats lines or SGLang Decode batch lines) to draw over time")
    iv = s.interval_s or 10.0
    lo, hi = _extent(inp, s)
    div, unit = m.time_scale(hi - lo)
    wins = s.windows
    has_prompt = any(w.prompt_tok_s is not None for w in wins) or bool(inp.prefill_points)
    has_kv = any(w.kv_usage_pct is not None for w in wins)
    has_wait = any(w.waiting is not None for w in wins)
    from matplotlib.ticker import MaxNLocator

    ratios = [3.0] + ([1.8] if has_prompt else []) + [1.5] + ([1.3] if has_kv else [])
    with m.style():
        fig = m.new_figure(10, 1.6 + 1.45 * sum(ratios) / 1.5)
        axes_any = fig.subplots(len(ratios), 1, sharex=True, gridspec_kw={"height_ratios": ratios})
        axes: list[Axes] = list(axes_any)
        ax_gen = axes[0]
        k = 1
        ax_prompt = axes[k] if has_prompt else None
        k += 1 if has_prompt else 0
        ax_run = axes[k]
        ax_kv = axes[k + 1] if has_kv else None

        handles: list[Any] = []
        x, y = steps(wins, "gen_tok_s", iv, div)
        (h,) = ax_gen.plot(
            x,
            y,
            drawstyle="steps-pre",
            color=m.BLUE,
            lw=1.4,
            label=f"generation tok/s ({m.short(s.label, 40)})",
        )
        handles.append(h)
        ax_gen.plot([w.t_s / div for w in wins], [w.gen_tok_s for w in wins], "o", color=m.BLUE, ms=2.5)
        for i, e in enumerate(inp.engines[:8]):
            ex, ey = steps(e.windows, "gen_tok_s", e.interval_s or iv, div)
            ax_gen.plot(
                ex,
                ey,
                drawstyle="steps-pre",
                lw=0.7,
                alpha=0.6,
                color=m.GREY,
                label="per engine" if i == 0 else None,
            )
        sd = inp.report.stable_decode
        if sd is not None:
            lead = sd.window_s or 0.0
            (h,) = ax_gen.plot(
                [(sd.start_t_s - lead) / div, sd.end_t_s / div],
                [sd.mean_tok_s] * 2,
                "--",
                color=m.GREEN,
                lw=1.4,
                label=f"stable mean {sd.mean_tok_s:,.1f} tok/s ({sd.min_tok_s:,.1f}-{sd.max_tok_s:,.1f})",
            )
            handles.append(h)
            ex_t = [w.t_s / div for w in sd.excluded]
            if ex_t:
                (h,) = ax_gen.plot(
                    ex_t,
                    [w.gen_tok_s for w in sd.excluded],
                    "x",
                    color=m.RED,
                    ms=7,
                    mew=1.5,
                    label="window left out of the segment",
                )
                handles.append(h)
        pf = inp.report.prefill
        starve = pf.decode_starvation if pf is not None else None
        if starve is not None and starve.windows:
            for j, w in enumerate(starve.windows):
                span = ax_gen.axvspan(
                    (w.t_s - iv) / div,
                    w.t_s / div,
                    facecolor="none",
                    edgecolor=m.RED,
                    hatch="////",
                    lw=0,
                    alpha=0.5,
                    label="decode starvation (prefill took the budget)" if j == 0 else None,
                )
                if j == 0:
                    handles.append(span)
        ax_gen.set_ylabel("generation\ntok/s")
        ax_gen.set_ylim(bottom=0)

        if ax_prompt is not None:
            if any(w.prompt_tok_s is not None for w in wins):
                x, y = steps(wins, "prompt_tok_s", iv, div)
                (h,) = ax_prompt.plot(
                    x, y, drawstyle="steps-pre", color=m.ORANGE, lw=1.3, label="prompt tok/s"
                )
            else:
                px = [t / div for t, _v in inp.prefill_points]
                (h,) = ax_prompt.plot(
                    px,
                    [v for _t, v in inp.prefill_points],
                    ".",
                    color=m.ORANGE,
                    ms=4,
                    label="prefill batch input tok/s",
                )
            handles.append(h)
            ax_prompt.set_ylabel("prompt\ntok/s")
            ax_prompt.set_ylim(bottom=0)

        x, y = steps(wins, "running", iv, div)
        (h,) = ax_run.plot(x, y, drawstyle="steps-pre", color=m.GREEN, lw=1.3, label="running requests")
        handles.append(h)
        if has_wait:
            x, y = steps(wins, "waiting", iv, div)
            (h,) = ax_run.plot(
                x, y, drawstyle="steps-pre", color=m.PURPLE, lw=1.3, ls="-.", label="waiting requests"
            )
            handles.append(h)
        ax_run.set_ylabel("requests")
        ax_run.set_ylim(bottom=0)
        ax_run.yaxis.set_major_locator(MaxNLocator(integer=True))

        if ax_kv is not None:
            x, y = steps(wins, "kv_usage_pct", iv, div)
            (h,) = ax_kv.plot(x, y, drawstyle="steps-pre", color=m.BLACK, lw=1.2, label="KV cache usage %")
            handles.append(h)
            ax_kv.set_ylabel("KV usage\n%")
            top = max((w.kv_usage_pct or 0.0) for w in wins)
            ax_kv.set_ylim(0, 100 if top > 50 else max(5.0, math.ceil(top * 1.25 / 5) * 5))

        shade = _shade_stable(axes, inp, div)
        if shade is not None:
            handles.append(shade)
        dh, hidden = _disturbances(axes, inp, lo, hi, div)
        handles += dh
        axes[-1].set_xlim(lo / div, hi / div)
        axes[-1].set_xlabel(f"time since the log's first timestamp ({unit})")
        title = f"Throughput over time: {m.short(inp.label, 50)}"
        ax_gen.set_title(title, loc="left", pad=14)
        note = f"{m.short(s.source, 40)}, one step per {iv:g} s window"
        if hidden:
            note += f"; {hidden} disturbance(s) outside this range (start-up)"
        ax_gen.text(
            1.0, 1.0, note, transform=ax_gen.transAxes, ha="right", va="bottom", fontsize=7.5, color=m.GREY
        )
        fig.legend(handles=handles, loc="outside lower center", ncols=min(4, len(handles)))
    return fig


def prefill_chunks(inp: PlotInput) -> Figure:
    pf = inp.report.prefill
    if pf is None:
        raise Skip("no prefill figures in this log")
    series = [c for c in pf.chunk_series if c.tok_s]
    if not series:
        why = (
            "vLLM prints no per-chunk prefill lines (its stats line averages 10 s windows)"
            if pf.source.startswith("vLLM")
            else "no request was prefilled in two or more chunks"
        )
        raise Skip(f"no prefill chunk series: {why}")
    with m.style():
        fig = m.new_figure(10, 4.2)
        ax_req, ax_seq = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.6]})
        many = len(series) > 12
        for c in series:
            xs = list(range(1, len(c.tok_s) + 1))
            ax_req.plot(
                xs,
                c.tok_s,
                "-o",
                ms=3 if not many else 0,
                lw=1.2 if not many else 0.7,
                alpha=1.0 if not many else 0.35,
                color=m.ORANGE if many else None,
                label=None if many else f"request {c.request} ({c.decay_pct:+.0f} %)",
            )
        longest = max(len(c.tok_s) for c in series)
        if many:
            med = []
            for i in range(longest):
                vals = sorted(c.tok_s[i] for c in series if len(c.tok_s) > i)
                med.append(vals[len(vals) // 2])
            ax_req.plot(
                range(1, longest + 1), med, "-o", color=m.BLACK, ms=3, lw=1.8, label="median over requests"
            )
        ax_req.set_xlabel("chunk of the request")
        ax_req.set_ylabel("prefill input tok/s")
        ax_req.set_xticks(
            range(1, longest + 1) if longest <= 16 else range(1, longest + 1, max(1, longest // 8))
        )
        ax_req.set_ylim(bottom=0)
        decay = pf.chunk_decay_median_pct
        ax_req.set_title(
            f"Each request: median change first to last\nchunk {decay:+.1f} %"
            if decay is not None
            else "Each request",
            loc="left",
            fontsize=9,
        )
        ax_req.legend(loc="lower left", ncols=2 if len(series) > 4 else 1)

        pos = 0
        for j, c in enumerate(series):
            xs = list(range(pos + 1, pos + len(c.tok_s) + 1))
            ax_seq.plot(xs, c.tok_s, "-o", ms=2.5, lw=1.1, color=m.ORANGE if j % 2 == 0 else m.RED)
            pos += len(c.tok_s)
        ax_seq.set_xlabel("chunk, in run order (requests alternate colour)")
        ax_seq.set_ylim(bottom=0)
        size = f", chunks of {pf.chunk_size:,} tokens" if pf.chunk_size else ""
        ax_seq.set_title(
            f"All chunks in run order ({len(series)} requests{size}):\nthe rate falls as the cached "
            "context grows, then restarts",
            loc="left",
            fontsize=9,
        )
        fig.suptitle(
            f"Prefill chunk series: {m.short(inp.label, 60)}",
            x=0.01,
            ha="left",
            fontweight="bold",
            fontsize=10,
        )
    return fig


def spec_acceptance(inp: PlotInput) -> Figure:
    sp = inp.report.spec_decode
    if sp is None:
        raise Skip("no speculative-decoding figures in this log")
    pp = sp.per_position_acceptance
    if not pp:
        raise Skip(f"no acceptance per draft position ({m.short(sp.source, 80)} prints only the mean)")
    colour = {"pays off": m.GREEN, "marginal": m.ORANGE, "net cost": m.RED}.get(sp.verdict, m.BLUE)
    with m.style():
        fig = m.new_figure(8, 4.2)
        ax = fig.subplots()
        xs = list(range(1, len(pp) + 1))
        bars = ax.bar(xs, [p * 100 for p in pp], color=colour, alpha=0.85, width=0.7)
        ax.bar_label(bars, labels=[f"{p * 100:.1f} %" for p in pp], fontsize=8, padding=2)
        ax.set_xticks(xs)
        ax.set_xlabel("draft position")
        ax.set_ylabel("drafts accepted at this position (%)")
        ax.set_ylim(0, max(100.0, max(pp) * 115))
        mal = sp.mean_acceptance_length
        rate = sp.acceptance_rate_pct
        lines = []
        if mal is not None:
            lines.append(f"mean acceptance length {mal:.2f} tokens per step (= 1 + sum of the bars)")
        if rate is not None:
            lines.append(f"acceptance rate {rate:.1f} %, {100 - rate:.1f} % of drafted tokens wasted")
        if sp.drafted_tok_s is not None and sp.accepted_tok_s is not None:
            lines.append(f"drafted {sp.drafted_tok_s:,.0f} tok/s, accepted {sp.accepted_tok_s:,.0f} tok/s")
        lines.append(f"verdict: {sp.verdict}")
        ax.text(
            0.98,
            0.96,
            "\n".join(lines),
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize=8.5,
            bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": colour},
        )
        k = f", k = {sp.draft_tokens}" if sp.draft_tokens else ""
        meth = (
            f" ({m.short(sp.speculative_method, 20)}{k})"
            if sp.speculative_method
            else (f" ({k[2:]})" if k else "")
        )
        ax.set_title(f"Spec decode acceptance per draft position{meth}: {m.short(inp.label, 40)}", loc="left")
    return fig


def _phase_span(inp: PlotInput, p: Any) -> tuple[float, float] | None:
    end_line = p.end_line if p.end_line is not None else p.start_line
    cs = inp.report.cold_start
    if p.source == "timestamps":
        t0, t1 = inp.line_times.get(p.start_line), inp.line_times.get(end_line)
        if t1 is None and cs is not None and end_line == cs.ready_line and cs.total_s is not None:
            t1 = cs.total_s  # an untimed ready line: the analysis took the last timestamp before it
        if t0 is not None and t1 is not None:
            return t0, t1
        return None
    t1 = inp.line_times.get(end_line)
    if t1 is None or p.seconds is None:
        return None
    return max(0.0, t1 - p.seconds), t1


def _fmt_range(p: Any) -> str:
    if p.range_s is None:
        return ""
    lo, hi = (f"{v:,.1f}" for v in p.range_s)
    return f" ({lo}-{hi} over {p.ranks} ranks)" if lo != hi else f" (all {p.ranks} ranks)"


def cold_start_waterfall(inp: PlotInput) -> Figure:
    import textwrap

    cs = inp.report.cold_start
    if cs is None:
        raise Skip("no cold-start figures in this log")
    rows: list[tuple[str, float, float, str, str]] = []
    for p in cs.phases:
        span = _phase_span(inp, p)
        if span is None or p.seconds is None:
            continue
        note = f"{p.seconds:,.1f} s{_fmt_range(p)}"
        if p.memory_gib is not None:
            note += f", {p.memory_gib:g} GiB"
        rows.append((p.name, span[0], span[1], note, p.source))
    if not rows and cs.total_s is None:
        raise Skip("the cold-start phases could not be placed in time")
    rows.sort(key=lambda r: (r[1], -r[2]))
    total = cs.total_s
    if total is not None:
        ready = f" ({cs.ready_time})" if cs.ready_time else ""
        rows.insert(
            0, (f"start -> ready{ready}", 0.0, total, f"{total:,.1f} s = {total / 60:.1f} min", "total")
        )
    end = max(r[2] for r in rows)
    xmax = end * 1.04
    div, unit = m.time_scale(end)
    colours = {"printed": m.BLUE, "timestamps": m.SKY, "total": m.GREY}
    labels = [textwrap.fill(m.short(r[0], 80), 34) for r in rows]
    with m.style():
        fig = m.new_figure(10, 1.6 + 0.48 * len(rows))
        ax = fig.subplots()
        ys = list(range(len(rows)))
        # text width in data units, roughly: 8 pt characters on an axis about 6.5 inches wide
        per_char = 4.6 / (6.5 * 72) * xmax
        for y, (_name, a, b, note, src) in zip(ys, rows, strict=True):
            ax.barh(
                y,
                (b - a) / div,
                left=a / div,
                color=colours.get(src, m.BLUE),
                height=0.62,
                alpha=0.9 if src != "total" else 0.45,
            )
            width = len(note) * per_char
            dark = src == "printed"
            if b - a > width * 1.1:
                x, ha, colour = a + (b - a) / 2, "center", "white" if dark else "black"
            elif b + width * 1.05 < xmax:
                x, ha, colour = b + xmax * 0.006, "left", "black"
            else:
                x, ha, colour = a - xmax * 0.006, "right", "black"
            ax.text(x / div, y, note, va="center", ha=ha, fontsize=8, color=colour)
        ax.set_yticks(ys, labels)
        ax.invert_yaxis()
        ax.set_xlim(0, xmax / div)
        ax.set_xlabel(f"time since the log's first timestamp ({unit})")
        ax.grid(axis="y", visible=False)
        from matplotlib.patches import Patch

        fig.legend(
            handles=[
                Patch(
                    color=m.BLUE, label="duration printed by the engine (slowest rank), ending at its line"
                ),
                Patch(color=m.SKY, label="measured between timestamps"),
                Patch(color=m.GREY, alpha=0.45, label="first timestamp to the ready line"),
            ],
            loc="outside lower center",
            ncols=3,
        )
        ax.set_title(
            f"Cold start: {m.short(inp.label, 60)} (bars can nest: a phase may include the ones below it)",
            loc="left",
        )
    return fig
