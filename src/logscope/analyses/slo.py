"""SLO gates: ``analyze ... --slo 'ttft_p95<=2s,tpot_p95<=50ms,error_rate<=1%'``.

Each gate is ``<metric><op><value><unit>``: metric ``ttft``, ``tpot``, ``itl``, ``e2e`` or ``queue`` with
``_mean``, ``_p50``, ``_p90``, ``_p95`` or ``_p99`` (latencies; unit ``s`` or ``ms``), or ``error_rate``
(unit ``%`` or a fraction); op ``<=``, ``<``, ``>=`` or ``>``.

Where a value comes from, first found wins, and the check says which:

1. ``client``: the benchmark client's result given with ``--bench`` (``p95_ttft_ms``; P50 is its
   median; error rate = failed / (successful + failed)). The client saw every request end to end;
2. ``metrics``: the server's histograms given with ``--metrics`` (quantiles over the run, see
   ``analyses.metrics``; error rate = requests finished with reason ``error`` or ``abort`` / all
   finished). A bucket estimate that is only a bound decides a gate only when the bound does
   (a quantile in the lowest bucket is at most its bound, in ``+Inf`` at least the highest bound);
3. otherwise the gate is ``unknown`` (the log of a vLLM/SGLang server prints no per-request latency
   in its default format), never ``pass``.

A run passes when every gate passes; a failing gate makes ``analyze`` exit 2, an unknown one 1 (3 with
``--strict``; ``logscope.exits``).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from logscope.events import Event

LATENCIES = ("ttft", "tpot", "itl", "e2e", "queue")
STATS = ("mean", "p50", "p90", "p95", "p99")
_GATE = re.compile(r"^\s*([a-z0-9_]+)\s*(<=|>=|<|>)\s*([0-9]*\.?[0-9]+(?:[eE][-+]?\d+)?)\s*(ms|s|%)?\s*$")
_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    "<": operator.lt,
    ">=": operator.ge,
    ">": operator.gt,
}


class SloCheck(BaseModel):
    """One gate, the value measured for it, where that came from, and the verdict."""

    model_config = ConfigDict(extra="forbid")

    gate: str = Field(description="the gate as given")
    metric: str
    op: str
    threshold: float = Field(description="in the metric's unit: ms for latencies, percent for error_rate")
    unit: str
    measured: float | None = Field(description="null when unknown")
    bound: Literal["exact", "at_most", "at_least"] | None = Field(
        None, description="at_most / at_least: the histogram gives only a bound on the value"
    )
    source: str | None = Field(description="client, metrics or log, with the file; null when unknown")
    status: Literal["pass", "fail", "unknown"]
    detail: str


class SloSection(BaseModel):
    """The ``--slo`` gates' checks; ``passed`` is true only when every gate passed."""

    model_config = ConfigDict(extra="forbid")

    method: str
    checks: list[SloCheck]
    passed: bool
    failed: int
    unknown: int


class SloSyntaxError(ValueError):
    pass


def parse_slo(text: str) -> list[tuple[str, str, str, float, str]]:
    """(gate, metric, op, threshold in the metric's unit, unit) per comma-separated gate."""
    gates = []
    for raw in text.split(","):
        if not raw.strip():
            continue
        m = _GATE.match(raw)
        if m is None:
            raise SloSyntaxError(
                f"cannot read the SLO gate {raw.strip()!r}: expected e.g. ttft_p95<=2s, "
                "tpot_p95<=50ms, error_rate<=1%"
            )
        metric, op, value, unit = m.group(1), m.group(2), float(m.group(3)), m.group(4) or ""
        if metric == "error_rate":
            if unit in ("s", "ms"):
                raise SloSyntaxError(f"{raw.strip()!r}: error_rate takes a percent (1%) or a fraction (0.01)")
            threshold, unit_out = (value if unit == "%" else 100.0 * value), "%"
        else:
            name, _, stat = metric.rpartition("_")
            if name not in LATENCIES or stat not in STATS:
                raise SloSyntaxError(
                    f"unknown SLO metric {metric!r}: use error_rate or one of "
                    f"{', '.join(LATENCIES)} with _{', _'.join(STATS)}"
                )
            if unit not in ("s", "ms"):
                raise SloSyntaxError(f"{raw.strip()!r}: a latency takes a unit, s or ms")
            threshold, unit_out = (value * 1000.0 if unit == "s" else value), "ms"
        gates.append((raw.strip(), metric, op, threshold, unit_out))
    if not gates:
        raise SloSyntaxError("--slo holds no gate")
    return gates


def _client(events: Sequence[Event], metric: str) -> tuple[float, str] | None:
    benches = [e for e in events if e.kind == "bench_result"]
    for e in reversed(benches):  # the last result given
        where = f"client {e.file}:{e.line}" if e.line else f"client {e.file}"
        if metric == "error_rate":
            ok, bad = getattr(e, "successful_requests", None), getattr(e, "failed_requests", None)
            if ok is not None and bad is not None and ok + bad > 0:
                return 100.0 * bad / (ok + bad), where + f" ({bad} failed of {ok + bad})"
            continue
        name, _, stat = metric.rpartition("_")
        field = f"{'median' if stat == 'p50' else stat}_{name}_ms"
        v = getattr(e, field, None)
        if v is not None:
            return float(v), where + f" ({field})"
    return None


def _metrics(metrics: Any, metric: str) -> tuple[float, str, str] | None:
    if metrics is None:
        return None
    if metric == "error_rate":
        by = getattr(metrics, "finished_by_reason", None) or {}
        total = sum(by.values())
        aborted, done = (metrics.counters.get(k) for k in ("requests_aborted", "requests_finished"))
        if (
            total <= 0 and aborted is not None and done is not None and done.total > 0
        ):  # SGLang: no finished_reason
            return (
                100.0 * aborted.total / done.total,
                f"metrics {metrics.files[0] if metrics.files else ''} "
                f"({aborted.family}_total / {done.family}_total: {aborted.total:g} of {done.total:g})",
                "exact",
            )
        if total <= 0:
            return None
        bad = by.get("error", 0.0) + by.get("abort", 0.0)
        return (
            100.0 * bad / total,
            f"metrics {metrics.files[0] if metrics.files else ''} (finished_reason "
            f"error/abort: {bad:g} of {total:g} finished requests)",
            "exact",
        )
    name, _, stat = metric.rpartition("_")
    h = metrics.histograms.get(f"{name}_s")
    if h is None or not h.over_run.count:
        return None
    q = h.over_run
    v = getattr(q, stat)
    if v is None:
        return None
    bound = "exact"
    if stat in q.in_first_bucket and q.first_bucket_s is not None:
        bound, v = "at_most", q.first_bucket_s  # the interpolated value inside it is no measurement
    elif stat in getattr(q, "in_inf_bucket", []):
        bound = "at_least"
    how = "sum / count" if stat == "mean" else "from the buckets"
    return 1000.0 * v, f"metrics {h.family} ({how}, {q.count} observations)", bound


def evaluate(text: str, events: Sequence[Event], metrics: Any = None) -> SloSection:
    checks: list[SloCheck] = []
    for gate, metric, op, threshold, unit in parse_slo(text):
        cmp = _OPS[op]
        got = _client(events, metric)
        bound = "exact"
        if got is not None:
            value, source = got
        else:
            m = _metrics(metrics, metric)
            if m is None:
                what = (
                    "no client result with --bench gives it, no --metrics histogram/counter gives it, and the log "
                    "prints no per-request latency or status"
                )
                checks.append(
                    SloCheck(
                        gate=gate,
                        metric=metric,
                        op=op,
                        threshold=threshold,
                        unit=unit,
                        measured=None,
                        source=None,
                        status="unknown",
                        detail=f"{metric} unknown: {what}",
                    )
                )
                continue
            value, source, bound = m
        ok = cmp(value, threshold)
        status: Literal["pass", "fail", "unknown"] = "pass" if ok else "fail"
        shown = f"{value:,.2f}".rstrip("0").rstrip(".") + f" {unit}"
        if bound != "exact":
            # a bound decides only when every value it allows gives the same verdict
            upper = op in ("<=", "<")
            if (upper and bound == "at_most") or (not upper and bound == "at_least"):
                status = "pass" if ok else "unknown"
            else:
                status = "fail" if not ok else "unknown"
            shown = f"{'≤' if bound == 'at_most' else '≥'} {shown}"
        verdict = {"pass": "passes", "fail": "fails", "unknown": "unknown"}[status]
        detail = f"{metric} {shown} {op} {threshold:g} {unit}: {verdict}"
        if status == "unknown":
            detail += " (the histogram's buckets bound the value on the wrong side to decide)"
        checks.append(
            SloCheck(
                gate=gate,
                metric=metric,
                op=op,
                threshold=threshold,
                unit=unit,
                measured=round(value, 4),
                bound=bound,
                source=source,
                status=status,
                detail=detail,
            )
        )
    failed = sum(c.status == "fail" for c in checks)
    unknown = sum(c.status == "unknown" for c in checks)
    return SloSection(
        method=(__doc__ or "").split("\n\n", 2)[2].strip().replace("\n", " "),
        checks=checks,
        passed=failed == 0 and unknown == 0,
        failed=failed,
        unknown=unknown,
    )
