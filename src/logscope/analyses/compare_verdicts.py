"""The verdicts of ``compare``: each headline metric's change OTHER vs BASE, its interval and PASS /
FAIL / INCONCLUSIVE (the statistics: ``analyses.verdict``), over one run or several runs per side.

Metrics, each where both sides have it:

- the decode rate of the method both sides share (stable decode in every run, else decode under
  load), aggregate and per running request; samples: the windows of the segment;
- the prefill rate (vLLM: the offered prompt load of the windows with prompt throughput; SGLang: the
  Prefill batch lines' rates); samples: those windows or lines;
- with client results (``--bench``) or server metrics (``--metrics``): TTFT, TPOT, ITL and end-to-end
  latency (mean, P50, P95) and the client's output throughput, set side by side at equal load. A
  client's per-request latencies (``vllm bench serve --save-result --save-detailed``), in blocks of
  consecutive requests, are the samples; a summary or a histogram gives one number per run.

A verdict is INCONCLUSIVE, whatever the numbers, when the runs are no A/B test (``not_ab``) or do not
run at equal load (the clients' concurrency limits, else the engines' decode concurrency, more than
``LOAD_TOLERANCE`` apart).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.base import RunData, mean
from logscope.analyses.series import main_series
from logscope.analyses.verdict import (
    BLOCK_REQUESTS,
    DEFAULT_THRESHOLD_PCT,
    LEVEL,
    METHOD,
    MIN_SAMPLES,
    Better,
    MetricVerdict,
    Outcome,
    blocks,
    decide,
    log_ratio_interval,
    single_run_interval,
    statistic,
)
from logscope.events import BenchResult

LOAD_TOLERANCE = 0.10


class EqualLoad(BaseModel):
    """The load each side ran at, and whether it is the same."""

    model_config = ConfigDict(extra="forbid")

    base: list[float]
    other: list[float]
    source: str
    matched: bool


class Verdicts(BaseModel):
    """The comparison's verdicts: one per metric, and the overall one (the worst)."""

    model_config = ConfigDict(extra="forbid")

    verdict: Outcome = Field(description="FAIL when a metric fails, else INCONCLUSIVE when one is, else PASS")
    reason: str
    threshold_pct: float
    level: float = LEVEL
    runs_base: int
    runs_other: int
    equal_load: EqualLoad | None = None
    method: str
    metrics: list[MetricVerdict] = Field(default_factory=list)


@dataclass
class Side:
    """One run of a side: its data, its report, its metrics section (``--metrics``) if any."""

    data: RunData
    report: Any
    metrics: Any = None


@dataclass
class _Val:
    """One run's value of a metric, and its within-run samples when it has them."""

    value: float
    source: str
    samples: list[float] | None = None
    kind: str | None = None  # "windows" or "requests"
    order: list[float] | None = None  # requests: their start times
    stat: str = "mean"
    notes: list[str] = field(default_factory=list)


# --- the decode and prefill rates (engine windows) ---


def shared_decode(sides: Sequence[Side]) -> str | None:
    for name in ("stable_decode", "decode_under_load"):
        if all(getattr(s.report, name) is not None for s in sides):
            return name
    return None


def _decode(side: Side, method: str) -> tuple[_Val | None, _Val | None]:
    seg = getattr(side.report, method)
    vals = [float(v) for v in seg.values_tok_s]
    if not vals:
        return None, None
    what = "stable decode" if method == "stable_decode" else "decode under load"
    src = f"{what} windows, lines {seg.start_line}-{seg.end_line}"
    agg = _Val(mean(vals), src, vals, "windows")
    if method == "stable_decode":
        per = [v / seg.concurrency for v in vals] if seg.concurrency else []
    else:
        if seg.per_request_not_applicable:
            return agg, None
        s = main_series(side.data)
        running = {x.line: x.running for x in s.samples} if s is not None else {}
        per = [v / running[ln] for v, ln in zip(vals, seg.lines, strict=False) if running.get(ln)]
        if len(per) != len(vals):
            return agg, None
    return agg, (
        _Val(mean(per), src + ", each window's rate / its running requests", per, "windows") if per else None
    )


def _prefill(side: Side) -> _Val | None:
    pf = side.report.prefill
    if pf is None or not pf.values_tok_s:
        return None
    vals = [float(v) for v in pf.values_tok_s]
    return _Val(mean(vals), pf.source, vals, "windows")


# --- latencies and throughput: client results, else server metrics ---

LATENCY = (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2e", "E2E"))
STATS = (("mean", "mean"), ("p50", "P50"), ("p95", "P95"))


def _client(side: Side) -> BenchResult | None:
    """The run's last client result, one with per-request latencies first (a run may come with both the
    client's printed block and its --save-result JSON)."""
    from logscope.parsers.bench_requests import per_request

    res = [e for e in side.data.events if isinstance(e, BenchResult)]
    detailed = [e for e in res if e.file and per_request(e.file).get("ttfts")]
    return (detailed or res)[-1] if res else None


def _per_request(r: BenchResult) -> dict[str, list[float]]:
    """Per-request latencies (ms) of a client result file that holds them (``--save-detailed``: ``ttfts``,
    ``latencies``, ``output_lens``), successful requests only. Empty when absent."""
    from logscope.parsers.bench_requests import per_request

    ex = per_request(r.file) if r.file else {}
    ttfts, lats, outs, errs = ex.get("ttfts"), ex.get("latencies"), ex.get("output_lens"), ex.get("errors")
    starts = ex.get("start_times")
    out: dict[str, list[float]] = {}
    if not ttfts:
        return out
    n = len(ttfts)
    ok = [
        i
        for i in range(n)
        if isinstance(ttfts[i], int | float)
        and ttfts[i] > 0
        and not (errs is not None and len(errs) == n and errs[i])
    ]
    out["ttft"] = [1000.0 * ttfts[i] for i in ok]
    if starts is not None and len(starts) == n and all(isinstance(starts[i], int | float) for i in ok):
        out["start"] = [float(starts[i]) for i in ok]
    if lats is not None and len(lats) == n and all(isinstance(lats[i], int | float) for i in ok):
        out["e2e"] = [1000.0 * lats[i] for i in ok]
        if outs is not None and len(outs) == n and all(isinstance(outs[i], int) and outs[i] > 1 for i in ok):
            out["tpot"] = [1000.0 * (lats[i] - ttfts[i]) / (outs[i] - 1) for i in ok]
    return out


def _client_value(r: BenchResult, name: str, stat: str, detail: dict[str, list[float]]) -> _Val | None:
    fld = f"{'median' if stat == 'p50' else stat}_{name}_ms"
    v = getattr(r, fld, None)
    if v is None:
        return None
    where = f"client {r.file.rsplit('/', 1)[-1]} ({fld})"
    xs = detail.get(name)
    if xs and len(xs) >= MIN_SAMPLES * BLOCK_REQUESTS:
        mine = statistic(xs, stat)
        if abs(mine - float(v)) <= 0.01 * abs(float(v)) + 1e-6:  # the file's per-request data give its figure
            return _Val(
                float(v),
                where + f", {len(xs)} requests",
                xs,
                "requests",
                stat=stat,
                order=detail.get("start"),
            )
    return _Val(float(v), where, stat=stat)


def _metrics_value(side: Side, name: str, stat: str) -> _Val | None:
    m = side.metrics
    h = m.histograms.get(f"{name}_s") if m is not None else None
    if h is None or not h.over_run.count:
        return None
    q = h.over_run
    v = getattr(q, stat, None)
    if v is None or stat in q.in_first_bucket or stat in q.in_inf_bucket:
        return None  # a bucket bound, no value
    how = "sum / count" if stat == "mean" else "histogram buckets"
    return _Val(1000.0 * float(v), f"metrics {h.family} ({how}, {q.count} observations)", stat=stat)


# --- one metric's verdict ---


def _interval(
    base: list[_Val], other: list[_Val]
) -> tuple[tuple[float, float, float] | None, str, dict[str, Any]]:
    """(change, low, high) as fractions, the method, the sample sizes; None when there is no interval."""
    bv, ov = [x.value for x in base], [x.value for x in other]
    if any(v <= 0 for v in bv + ov):
        return None, "none", {}
    if len(bv) > 1 or len(ov) > 1:
        res = log_ratio_interval(bv, ov, len(bv), len(ov), pooled=min(len(bv), len(ov)) == 1)
        return res, "runs", {"samples_base": len(bv), "samples_other": len(ov)}
    b, o = base[0], other[0]
    if b.samples is None or o.samples is None or b.kind != o.kind:
        return None, "none", {}
    if b.kind == "requests":  # the statistic of blocks of consecutive requests
        bs, os_ = (
            blocks(b.samples, b.order, b.stat, BLOCK_REQUESTS),
            blocks(o.samples, o.order, o.stat, BLOCK_REQUESTS),
        )
        center: tuple[float, float] | None = (b.value, o.value)
    else:
        bs, os_, center = b.samples, o.samples, None
    sizes: dict[str, Any] = {"samples_base": len(bs), "samples_other": len(os_)}
    if len(bs) < MIN_SAMPLES or len(os_) < MIN_SAMPLES:
        return None, "none", sizes
    if any(v <= 0 for v in bs + os_):
        return None, "none", {}
    c, lo, hi, nb, no = single_run_interval(bs, os_, center)
    sizes.update(effective_base=round(nb, 1), effective_other=round(no, 1))
    return (c, lo, hi), str(b.kind), sizes


def metric_verdict(
    key: str,
    label: str,
    unit: str,
    better: Better,
    base: list[_Val],
    other: list[_Val],
    threshold_pct: float,
    blockers: Sequence[str] = (),
) -> MetricVerdict | None:
    if not base and not other:
        return None
    srcs = {"; ".join(sorted({x.source.split(" ")[0] for x in side})) for side in (base, other) if side}
    sb, so = (
        "; ".join(dict.fromkeys(x.source for x in base)),
        "; ".join(dict.fromkeys(x.source for x in other)),
    )
    source = sb if sb == so else f"BASE: {sb or 'none'}; OTHER: {so or 'none'}"
    common: dict[str, Any] = {
        "metric": key,
        "label": label,
        "unit": unit,
        "better": better,
        "threshold_pct": threshold_pct,
        "source": source,
    }
    if not base or not other:
        missing = "BASE" if not base else "OTHER"
        return MetricVerdict(
            **common,
            base=_avg(base),
            other=_avg(other),
            change_pct=None,
            ci_low_pct=None,
            ci_high_pct=None,
            verdict="INCONCLUSIVE",
            method="none",
            reason=f"{missing} has no {label} (only one side measured it)",
        )
    pb, po = _avg(base), _avg(other)
    change = (po / pb - 1) if pb and po is not None else None
    if len(srcs) > 1:
        return MetricVerdict(
            **common,
            base=pb,
            other=po,
            change_pct=_pct(change),
            ci_low_pct=None,
            ci_high_pct=None,
            verdict="INCONCLUSIVE",
            method="none",
            reason=f"measured differently on the two sides ({' vs '.join(sorted(srcs))})",
        )
    ci, method, sizes = _interval(base, other)
    if ci is None:
        why = (
            "one number per side and no samples behind it (a summary or a histogram): no noise estimate, so no "
            "interval; give several runs per side (--base A1 A2 --other B1 B2) or per-request client results "
            "(vllm bench serve --save-result --save-detailed)"
        )
        if sizes:
            why = (
                f"too few samples for an interval ({sizes['samples_base']} vs {sizes['samples_other']}; at least "
                f"{MIN_SAMPLES} per side)"
            )
        return MetricVerdict(
            **common,
            base=pb,
            other=po,
            change_pct=_pct(change),
            ci_low_pct=None,
            ci_high_pct=None,
            verdict="INCONCLUSIVE",
            method="none",
            reason=why,
            **sizes,
        )
    c, lo, hi = ci
    outcome, reason = decide(c, lo, hi, threshold_pct, better)
    if blockers:
        outcome, reason = "INCONCLUSIVE", "; ".join(blockers) + f". The change itself: {reason}"
    return MetricVerdict(
        **common,
        base=pb,
        other=po,
        change_pct=_pct(c),
        ci_low_pct=_pct(lo),
        ci_high_pct=_pct(hi),
        verdict=outcome,
        reason=reason,
        method=method,
        **sizes,
    )


def _avg(vals: list[_Val]) -> float | None:
    return round(mean([x.value for x in vals]), 2) if vals else None


def _pct(x: float | None) -> float | None:
    return None if x is None else round(100 * x, 2)


# --- all of them ---


def _engines(sides: Sequence[Side], decode: str | None) -> tuple[list[float], str] | None:
    if decode is None:
        return None
    how = "stable decode plateau" if decode == "stable_decode" else "decode under load, median"
    return [
        float(getattr(s.report, decode).concurrency) for s in sides
    ], f"the engines' running requests ({how})"


def _clients(sides: Sequence[Side]) -> tuple[list[float], str] | None:
    limits = [c.max_concurrency if (c := _client(s)) is not None else None for s in sides]
    if not limits or any(x is None for x in limits):
        return None
    return [float(x) for x in limits if x is not None], "the clients' max concurrency"


def equal_load(base: Sequence[Side], other: Sequence[Side], decode: str | None) -> EqualLoad | None:
    """The clients' concurrency limits when every run has one, else the engines' decode concurrency."""
    cb, co = _clients(base), _clients(other)
    if cb is None or co is None:
        cb, co = _engines(base, decode), _engines(other, decode)
    if cb is None or co is None:
        return None
    vals = cb[0] + co[0]
    matched = max(vals) <= 0 or (max(vals) - min(vals)) / max(vals) <= LOAD_TOLERANCE
    return EqualLoad(base=cb[0], other=co[0], source=cb[1], matched=matched)


def verdicts(
    base: Sequence[Side],
    other: Sequence[Side],
    threshold_pct: float = DEFAULT_THRESHOLD_PCT,
    not_ab_reasons: Sequence[str] = (),
    context_ratio: float | None = None,
) -> Verdicts:
    """Every metric's verdict for BASE's runs against OTHER's (``not_ab_reasons``: why the two setups are
    no A/B test; each makes every verdict INCONCLUSIVE; ``context_ratio``: OTHER / BASE context length,
    which makes vLLM's offered prompt load a figure of the workload)."""
    blockers = [f"not an A/B test ({'; '.join(not_ab_reasons)})"] if not_ab_reasons else []
    decode = shared_decode([*base, *other])
    load = equal_load(base, other, decode)
    load_block = list(blockers)
    if load is not None and not load.matched:
        load_block.append(f"not at equal load: {_show(load.base)} vs {_show(load.other)} ({load.source})")
    out: list[MetricVerdict] = []

    def add(v: MetricVerdict | None) -> None:
        if v is not None:
            out.append(v)

    if decode is not None:
        pairs_b = [_decode(s, decode) for s in base]
        pairs_o = [_decode(s, decode) for s in other]
        add(
            metric_verdict(
                "decode_tok_s",
                "decode tok/s",
                "tok/s",
                "higher",
                [a for a, _ in pairs_b if a],
                [a for a, _ in pairs_o if a],
                threshold_pct,
                load_block,
            )
        )
        add(
            metric_verdict(
                "per_request_tok_s",
                "decode tok/s per request",
                "tok/s",
                "higher",
                [p for _, p in pairs_b if p],
                [p for _, p in pairs_o if p],
                threshold_pct,
                load_block,
            )
        )
    pre_b = [v for s in base if (v := _prefill(s))]
    pre_o = [v for s in other if (v := _prefill(s))]
    measures = {s.report.prefill.measure for s in [*base, *other] if s.report.prefill is not None}
    label = "prefill tok/s (offered load)" if measures == {"offered_prompt_load"} else "prefill tok/s"
    pre_block = list(load_block)
    if (
        measures == {"offered_prompt_load"}
        and context_ratio is not None
        and abs(context_ratio - 1) > LOAD_TOLERANCE
    ):
        pre_block.append(
            f"the prompts differ in length ({context_ratio:g}x, the context under test): vLLM's prompt "
            "throughput is the prompt tokens offered per second, a figure of the workload, not a "
            "prefill speed"
        )
    add(metric_verdict("prefill_tok_s", label, "tok/s", "higher", pre_b, pre_o, threshold_pct, pre_block))
    for name, title in LATENCY:
        for stat, stitle in STATS:
            vb, vo = _latency(base, name, stat), _latency(other, name, stat)
            add(
                metric_verdict(
                    f"{name}_{stat}_ms", f"{title} {stitle}", "ms", "lower", vb, vo, threshold_pct, load_block
                )
            )
    tb = [
        _Val(float(c.output_tok_s), f"client {c.file.rsplit('/', 1)[-1]} (output_tok_s)")
        for s in base
        if (c := _client(s)) is not None and c.output_tok_s
    ]
    to = [
        _Val(float(c.output_tok_s), f"client {c.file.rsplit('/', 1)[-1]} (output_tok_s)")
        for s in other
        if (c := _client(s)) is not None and c.output_tok_s
    ]
    add(
        metric_verdict(
            "output_tok_s", "client output tok/s", "tok/s", "higher", tb, to, threshold_pct, load_block
        )
    )
    return Verdicts(
        verdict=_worst(out),
        reason=_overall_reason(out),
        threshold_pct=threshold_pct,
        runs_base=len(base),
        runs_other=len(other),
        equal_load=load,
        metrics=out,
        method=METHOD,
    )


def _latency(sides: Sequence[Side], name: str, stat: str) -> list[_Val]:
    out = []
    for s in sides:
        c = _client(s)
        v = _client_value(c, name, stat, _per_request(c)) if c is not None else None
        if v is None:
            v = _metrics_value(s, name, stat)
        if v is not None:
            out.append(v)
    return out


def _worst(ms: Sequence[MetricVerdict]) -> Outcome:
    if any(m.verdict == "FAIL" for m in ms):
        return "FAIL"
    if not ms or any(m.verdict == "INCONCLUSIVE" for m in ms):
        return "INCONCLUSIVE"
    return "PASS"


def _overall_reason(ms: Sequence[MetricVerdict]) -> str:
    if not ms:
        return "no metric both runs measure"
    w = _worst(ms)
    named = [m.metric for m in ms if m.verdict == w]
    if w == "PASS":
        return f"every metric ({len(ms)}) passes"
    return (
        f"{', '.join(named)} {'fail' if w == 'FAIL' else 'inconclusive'} ({len(named)} of {len(ms)} metrics)"
    )


def _show(vals: list[float]) -> str:
    return "/".join(f"{v:g}" for v in vals)
