"""Result files of the other benchmark clients: AIPerf, GuideLLM, genai-bench, inference-perf, and
llm-d's benchmark report (BR v0.2), each read into ``bench_result`` fields.

Each reader follows the tool's own published schema (the source of every test file is in
``fixtures/bench/clients/README.md``). Figures keep the tool's numbers, converted to the field's unit
only (seconds to ms); a field is filled only when the tool's figure means what the field means, after
vLLM's definitions:

* TPOT: a request's (e2e − TTFT) / (output tokens − 1), averaged over requests. AIPerf and GuideLLM
  call this "inter token latency"; it goes to the ``tpot`` fields, not the ``itl`` ones.
* ITL: the gaps between streamed chunks, pooled over all requests (vLLM's, inference-perf's).
* output throughput: the tool's own figure; how the tool computed it is its own (AIPerf and vLLM:
  tokens / duration; GuideLLM: the mean of its rate samples; genai-bench: output tokens / run time).

A figure the file does not print but that follows exactly from what it prints (total output tokens
= mean output length × successful requests; a duration from start and end times) is filled and named
in ``extra["derived"]`` with how. Everything else the file holds goes to ``extra`` by its key
(statistics flattened as ``{metric}_{stat}``); per-request lists and other bulky values are not copied
but listed in ``extra["not_kept"]`` with their size, so nothing is dropped silently.

Per-request files (AIPerf ``profile_export.jsonl``, inference-perf
``per_request_lifecycle_metrics.json``) are summarised here: counts and sums exactly, means and
percentiles by linear interpolation between order statistics (numpy's default), and the duration as
last end − first start; ``extra["aggregated_from"]`` says over how many records.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

__all__ = ["classify", "read_csv", "read_object", "read_records"]

_BULKY = 64  # a list longer than this (or a nested dict with more keys) is per-request data: not kept
_Q = {
    "mean": "mean",
    "avg": "mean",
    "median": "median",
    "p50": "median",
    "p90": "p90",
    "p95": "p95",
    "p99": "p99",
    "max": "max",
}
_HAS_MAX = {"itl"}  # the only metric whose max has a bench_result field (max_itl_ms)


# -- helpers ----------------------------------------------------------------------------------------
def _d(x: Any) -> dict[str, Any]:
    """``x`` when it is a mapping, else an empty one (a file may hold null or another type anywhere)."""
    return x if isinstance(x, dict) else {}


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) else None


def _int(x: Any) -> int | None:
    v = _num(x)
    return int(v) if v is not None and v.is_integer() else None


def _scale(unit: str | None) -> float | None:
    """Factor from ``unit`` to milliseconds (None: not a time unit)."""
    u = (unit or "").strip().lower()
    u = u.split("/")[0] if "/" in u and u.split("/")[1] in ("token", "tok", "tokens") else u
    return {
        "ms": 1.0,
        "msec": 1.0,
        "milliseconds": 1.0,
        "s": 1000.0,
        "sec": 1000.0,
        "seconds": 1000.0,
        "second": 1000.0,
        "us": 1e-3,
        "ns": 1e-6,
    }.get(u)


def _compact(key: str, value: Any, extra: dict[str, Any], depth: int = 0) -> None:
    """Keep ``value`` under ``key`` in ``extra``: scalars as they are, small dicts flattened
    (``key_sub``), short lists of scalars as lists; bulky values are named in ``not_kept``."""
    if value is None or isinstance(value, str | bool):
        extra[key] = value
    elif isinstance(value, int | float):
        extra[key] = value if math.isfinite(value) else str(value)
    elif isinstance(value, list):
        if len(value) <= _BULKY and all(v is None or isinstance(v, str | int | float | bool) for v in value):
            extra[key] = [v if not isinstance(v, float) or math.isfinite(v) else str(v) for v in value]
        else:
            extra.setdefault("not_kept", {})[key] = f"list of {len(value)}"
    elif isinstance(value, dict):
        if len(value) > _BULKY or depth >= 4:
            extra.setdefault("not_kept", {})[key] = f"object of {len(value)} keys"
            return
        for k, v in value.items():
            _compact(f"{key}_{k}", v, extra, depth + 1)
    else:
        extra[key] = str(value)


def _stats(
    out: dict[str, Any],
    extra: dict[str, Any],
    what: str,
    name: str,
    stats: dict[str, Any],
    factor: float = 1.0,
) -> None:
    """Statistics of one latency (``what``: ttft, tpot, itl, e2e) into the ``{q}_{what}_ms`` fields;
    the statistics without a field go to ``extra`` as ``{name}_{stat}``."""
    for q, v in stats.items():
        x = _num(v)
        field = _Q.get(q)
        if field == "max" and what not in _HAS_MAX:
            field = None
        if x is not None and field is not None and f"{field}_{what}_ms" not in out:
            out[f"{field}_{what}_ms"] = x * factor
        elif isinstance(v, dict):
            _compact(f"{name}_{q}", v, extra)
        elif q not in ("unit", "units"):
            extra[f"{name}_{q}"] = v if x is None else x


def _percentile(values: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default method)."""
    s = sorted(values)
    pos = (len(s) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _summary(out: dict[str, Any], what: str, values: list[float]) -> None:
    if not values:
        return
    out[f"mean_{what}_ms"] = sum(values) / len(values)
    for q, name in ((50, "median"), (90, "p90"), (95, "p95"), (99, "p99")):
        out[f"{name}_{what}_ms"] = _percentile(values, q)
    if what in _HAS_MAX:
        out[f"max_{what}_ms"] = max(values)


def _derived(extra: dict[str, Any], field: str, how: str) -> None:
    extra.setdefault("derived", {})[field] = how


def _finish(out: dict[str, Any], extra: dict[str, Any], client: str) -> dict[str, Any]:
    out = {k: v for k, v in out.items() if v is not None}
    out.update(client=client, complete=True, rows=len(out) + len(extra), extra=extra)
    return out


_ISO_DURATION = re.compile(
    r"P(?:(\d+(?:\.\d+)?)D)?T?(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?"
)


def _iso_seconds(text: Any) -> float | None:
    """Seconds of an ISO 8601 duration (``PT49.97S``)."""
    if not isinstance(text, str):
        return _num(text)
    m = _ISO_DURATION.fullmatch(text.strip())
    if m is None or not any(m.groups()):
        return None
    d, h, mi, s = (float(g) if g else 0.0 for g in m.groups())
    return ((d * 24 + h) * 60 + mi) * 60 + s


def _when(x: Any) -> float | None:
    """Epoch seconds of a number or an ISO 8601 date-time."""
    v = _num(x)
    if v is not None:
        return v
    if isinstance(x, datetime):
        return x.timestamp()
    if isinstance(x, str):
        try:
            return datetime.fromisoformat(x.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


# -- AIPerf ---------------------------------------------------------------------------------------
# profile_export_aiperf.json: {metric_tag: {unit, avg, min, max, p1 ... p99, std}, input_config, ...}
_AIPERF_LATENCY = {"time_to_first_token": "ttft", "inter_token_latency": "tpot", "request_latency": "e2e"}
_AIPERF_VALUE = {
    "request_throughput": "request_throughput",
    "output_token_throughput": "output_tok_s",
    "total_token_throughput": "total_tok_s",
    "input_token_throughput": "input_tok_s",
    "request_count": "successful_requests",
    "error_request_count": "failed_requests",
    "total_output_tokens": "total_output_tokens",
    "total_isl": "total_input_tokens",
    "benchmark_duration": "duration_s",
}


def _aiperf(obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in obj.items():
        if key in _AIPERF_LATENCY and isinstance(value, dict):
            factor = _scale(value.get("unit"))
            if factor is None:
                _compact(key, value, extra)
            else:
                _stats(out, extra, _AIPERF_LATENCY[key], key, value, factor)
        elif key in _AIPERF_VALUE and isinstance(value, dict) and _num(value.get("avg")) is not None:
            field = _AIPERF_VALUE[key]
            avg = _num(value["avg"])
            if field == "duration_s":
                f = _scale(value.get("unit"))
                avg = None if f is None or avg is None else avg * f / 1000
            out[field] = _int(avg) if field in _COUNTS else avg
            for q, v in value.items():
                if q not in ("avg", "unit"):
                    extra[f"{key}_{q}"] = v
        elif key == "input_config" and isinstance(value, dict):
            load = _d(value.get("loadgen"))
            conc, rate = _int(load.get("concurrency")), _num(load.get("request_rate"))
            if conc:
                out["max_concurrency"] = conc
            if rate:
                out["request_rate"] = rate
            _compact(key, value, extra)
        else:
            _compact(key, value, extra)
    return _finish(out, extra, "aiperf")


_COUNTS = {"successful_requests", "failed_requests", "total_output_tokens", "total_input_tokens"}


def _aiperf_records(records: list[dict[str, Any]]) -> dict[str, Any]:
    """AIPerf's per-request ``profile_export.jsonl``: one summary of the profiling-phase records."""
    out: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    ttft: list[float] = []
    tpot: list[float] = []
    e2e: list[float] = []
    gaps: list[float] = []
    ok = failed = 0
    out_tokens = in_tokens = 0
    starts: list[int] = []
    ends: list[int] = []
    other_phases = 0
    for rec in records:
        meta = rec.get("metadata") or {}
        if meta.get("benchmark_phase", "profiling") != "profiling":
            other_phases += 1
            continue
        if isinstance(meta.get("request_start_ns"), int):
            starts.append(meta["request_start_ns"])
        if isinstance(meta.get("request_end_ns"), int):
            ends.append(meta["request_end_ns"])
        if rec.get("error") is not None:
            failed += 1
            continue
        ok += 1
        metrics = rec.get("metrics") or {}

        def val(tag: str, m: dict[str, Any] = metrics) -> Any:
            v = m.get(tag)
            return v.get("value") if isinstance(v, dict) else None

        def ms(tag: str, m: dict[str, Any] = metrics) -> float | None:
            v = m.get(tag)
            if not isinstance(v, dict):
                return None
            x, f = _num(v.get("value")), _scale(v.get("unit"))
            return None if x is None or f is None else x * f

        for tag, into in (
            ("time_to_first_token", ttft),
            ("inter_token_latency", tpot),
            ("request_latency", e2e),
        ):
            x = ms(tag)
            if x is not None:
                into.append(x)
        chunk = metrics.get("inter_chunk_latency")
        if isinstance(chunk, dict) and isinstance(chunk.get("value"), list) and _scale(chunk.get("unit")):
            f = _scale(chunk.get("unit")) or 1.0
            gaps += [float(g) * f for g in chunk["value"] if _num(g) is not None]
        osl, isl = _int(val("output_sequence_length")), _int(val("input_sequence_length"))
        out_tokens += osl or 0
        in_tokens += isl or 0
    out.update(
        successful_requests=ok,
        failed_requests=failed,
        total_output_tokens=out_tokens,
        total_input_tokens=in_tokens,
    )
    for what, values in (("ttft", ttft), ("tpot", tpot), ("e2e", e2e), ("itl", gaps)):
        _summary(out, what, values)
    if starts and ends:
        dur = (max(ends) - min(starts)) / 1e9
        if dur > 0:
            out["duration_s"] = dur
            _derived(
                extra,
                "duration_s",
                "last request end − first request start (request_start_ns, request_end_ns)",
            )
            out["output_tok_s"] = out_tokens / dur
            out["request_throughput"] = ok / dur
            _derived(extra, "output_tok_s", "total output_sequence_length / duration_s")
            _derived(extra, "request_throughput", "successful records / duration_s")
    extra["aggregated_from"] = f"{len(records)} per-request records ({ok} ok, {failed} failed)"
    if other_phases:
        extra["records_outside_profiling"] = other_phases
    if gaps:
        _derived(extra, "itl", "inter_chunk_latency values of every request, pooled")
    return _finish(out, extra, "aiperf")


def read_csv(text: str) -> dict[str, Any] | None:
    """AIPerf's ``profile_export_aiperf.csv``: a ``Metric,avg,min,...`` section (one row per metric
    with statistics) and a ``Metric,Value`` section, headers named ``Header (unit)``."""
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or rows[0][:2] != ["Metric", "avg"]:
        return None
    by_header = {h: t for t, h in _AIPERF_HEADERS.items()}
    obj: dict[str, Any] = {}
    header: list[str] = []
    other: list[str] = []  # sections that are not metrics (GPU telemetry: Endpoint,GPU_Index,...)
    fresh = True  # the next non-blank row is a section's header
    for row in rows:
        if not row or not any(c.strip() for c in row):
            fresh = True
            continue
        if fresh:
            fresh = False
            header = row if row[0] == "Metric" else []
            if not header:
                other.append(",".join(row[:4]))
            continue
        if len(row) < 2 or not header:
            continue
        m = re.fullmatch(r"(.*?)(?: \(([^()]*)\))?", row[0].strip())
        name, unit = (m.group(1), m.group(2)) if m else (row[0], None)
        tag = by_header.get(name, re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_"))
        stats: dict[str, Any] = {"unit": unit} if unit else {}
        for col, cell in zip(header[1:], row[1:], strict=False):
            cell = cell.strip()
            if not cell:
                continue
            try:
                stats["avg" if col == "Value" else col] = float(cell)
            except ValueError:
                stats["avg" if col == "Value" else col] = cell
        obj[tag] = stats
    if not obj:
        return None
    fields = _aiperf(obj)
    if other:
        fields["extra"].setdefault("not_kept", {})["csv_sections"] = other
    return fields


# the headers AIPerf prints for the tags read above (its metric classes' ``header``)
_AIPERF_HEADERS = {
    "time_to_first_token": "Time to First Token",
    "inter_token_latency": "Inter Token Latency",
    "request_latency": "Request Latency",
    "request_throughput": "Request Throughput",
    "output_token_throughput": "Output Token Throughput",
    "request_count": "Request Count",
    "error_request_count": "Error Request Count",
    "total_output_tokens": "Total Output Tokens",
    "total_isl": "Total Input Sequence Length",
    "benchmark_duration": "Benchmark Duration",
    "total_token_throughput": "Total Token Throughput",
    "input_token_throughput": "Input Token Throughput",
    "output_sequence_length": "Output Sequence Length",
    "input_sequence_length": "Input Sequence Length",
}


# -- GuideLLM -------------------------------------------------------------------------------------
# benchmarks.json / .yaml: {"benchmarks": [{"metrics": {name: {"successful": {mean, median, percentiles
# {p90 ...}, count, total_sum ...}, "errored": ..., "incomplete": ..., "total": ...}}, ...}]}
_GUIDELLM_LATENCY = {
    "time_to_first_token_ms": ("ttft", 1.0),
    "inter_token_latency_ms": ("tpot", 1.0),
    "request_latency": ("e2e", 1000.0),
}
_GUIDELLM_RATE = {
    "output_tokens_per_second": "output_tok_s",
    "requests_per_second": "request_throughput",
    "request_concurrency": "concurrency",
}


def _guidellm_stats(dist: dict[str, Any]) -> dict[str, Any]:
    stats = {k: v for k, v in dist.items() if k != "percentiles"}
    pct = dist.get("percentiles")
    if isinstance(pct, dict):
        stats.update(pct)
    return stats


def _guidellm(bench: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    metrics = _d(bench.get("metrics"))
    for name, groups in metrics.items():
        if not isinstance(groups, dict):
            _compact(f"metrics_{name}", groups, extra)
            continue
        ok = _d(groups.get("successful")) or None
        if ok is not None and name in _GUIDELLM_LATENCY:
            what, factor = _GUIDELLM_LATENCY[name]
            _stats(out, extra, what, name, _guidellm_stats(ok), factor)
        elif ok is not None and name in _GUIDELLM_RATE and _num(ok.get("mean")) is not None:
            out[_GUIDELLM_RATE[name]] = _num(ok["mean"])
            for q, v in _guidellm_stats(ok).items():
                if q != "mean":
                    _compact(f"{name}_{q}", v, extra)
        elif ok is not None:
            for q, v in _guidellm_stats(ok).items():
                _compact(f"{name}_{q}", v, extra)
        else:  # not a distribution (GuideLLM 0.8's request_totals, per-modality groups)
            _compact(f"metrics_{name}", groups, extra)
        for group in ("errored", "incomplete", "total"):
            g = groups.get(group)
            if isinstance(g, dict) and _num(g.get("count")):
                for q in ("count", "mean"):
                    extra[f"{name}_{group}_{q}"] = g.get(q)
    totals = _d(bench.get("request_totals")) or _d(metrics.get("request_totals"))  # 0.2-0.4, 0.8
    lat = (
        metrics.get("request_latency", {}).get("successful", {})
        if isinstance(metrics.get("request_latency"), dict)
        else {}
    )
    ok_count = _int(totals.get("successful")) if totals else _int(lat.get("count"))
    if ok_count is not None:
        out["successful_requests"] = ok_count
    if totals:
        out["failed_requests"] = _int(totals.get("errored"))
        extra["incomplete_requests"] = totals.get("incomplete")
    out_tok = (
        metrics.get("output_token_count", {}).get("successful", {})
        if isinstance(metrics.get("output_token_count"), dict)
        else {}
    )
    in_tok = (
        metrics.get("prompt_token_count", {}).get("successful", {})
        if isinstance(metrics.get("prompt_token_count"), dict)
        else {}
    )
    if _num(out_tok.get("total_sum")) is not None:
        out["total_output_tokens"] = _int(out_tok["total_sum"])
    if _num(in_tok.get("total_sum")) is not None:
        out["total_input_tokens"] = _int(in_tok["total_sum"])
    dur = _num(bench.get("duration"))
    if dur is None:
        start, end = _when(bench.get("start_time")), _when(bench.get("end_time"))
        if start is not None and end is not None and end > start:
            dur = end - start
            _derived(extra, "duration_s", "end_time − start_time")
    if dur:
        out["duration_s"] = dur
    for key, value in bench.items():
        if key in ("metrics", "request_totals", "duration"):
            continue
        if key == "requests":
            if isinstance(value, dict):
                sizes = {k: len(v) for k, v in value.items() if isinstance(v, list)}
                extra.setdefault("not_kept", {})["requests"] = f"per-request samples {sizes}"
            continue
        if key in ("args", "config") and isinstance(value, dict):  # the strategy: 0.2-0.4 args, 0.8 config
            strat = _d(value.get("strategy"))
            conc, rate = _int(strat.get("streams") or strat.get("max_concurrency")), _num(strat.get("rate"))
            if conc:
                out["max_concurrency"] = conc
            if rate and rate > 0:
                out["request_rate"] = rate
        _compact(key, value, extra)
    return _finish(out, extra, "guidellm")


# -- genai-bench ------------------------------------------------------------------------------------
# one run's JSON: {"aggregated_metrics": {..., "stats": {name: {min, max, mean, stddev, sum, p25 ... p99}}},
#                  "individual_request_metrics": [...], "_time_unit": "s" | "ms"}
_GENAI_LATENCY = {"ttft": "ttft", "tpot": "tpot", "e2e_latency": "e2e"}
_GENAI_VALUE = {
    "mean_output_throughput_tokens_per_s": "output_tok_s",
    "mean_input_throughput_tokens_per_s": "input_tok_s",
    "mean_total_tokens_throughput_tokens_per_s": "total_tok_s",
    "requests_per_second": "request_throughput",
    "num_completed_requests": "successful_requests",
    "num_error_requests": "failed_requests",
    "run_duration": "duration_s",
    "num_concurrency": "max_concurrency",
}


def _genai(obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    agg = obj["aggregated_metrics"]
    factor = _scale(str(obj.get("_time_unit") or "s")) or 1000.0
    for key, value in agg.items():
        if key == "stats" and isinstance(value, dict):
            for name, stats in value.items():
                if name in _GENAI_LATENCY and isinstance(stats, dict):
                    _stats(out, extra, _GENAI_LATENCY[name], name, stats, factor)
                elif isinstance(stats, dict):
                    for q, v in stats.items():
                        extra[f"{name}_{q}"] = v
            for name, field in (
                ("num_output_tokens", "total_output_tokens"),
                ("num_input_tokens", "total_input_tokens"),
            ):
                s = value.get(name)
                if isinstance(s, dict) and _num(s.get("sum")) is not None:
                    out[field] = _int(s["sum"])
        elif key in _GENAI_VALUE and _num(value) is not None:
            field = _GENAI_VALUE[key]
            out[field] = _int(value) if field in _COUNTS or field == "max_concurrency" else _num(value)
            if field == "duration_s" and not out[field]:
                out.pop(field)  # 0.0 is the schema's default, not a measurement
        elif key == "requests_per_minute" and _num(value) is not None:
            out["request_throughput"] = _num(value) / 60  # type: ignore[operator]
            _derived(extra, "request_throughput", "requests_per_minute / 60")
        else:
            _compact(key, value, extra)
    for key, value in obj.items():
        if key != "aggregated_metrics":
            _compact(key, value, extra)
    return _finish(out, extra, "genai-bench")


# -- inference-perf ---------------------------------------------------------------------------------
# summary_lifecycle_metrics.json / stage_N_lifecycle_metrics.json: {"load_summary": {...}, "successes":
# {"count", "latency": {name: {mean, median, p90 ...}} (seconds), "throughput": {...}, "prompt_len",
# "output_len"}, "failures": {"count", ...}}
# latency names shared by inference-perf and BR (whose schema came from inference-perf's report)
_IP_LATENCY = {
    "time_to_first_token": "ttft",
    "time_per_output_token": "tpot",
    "inter_token_latency": "itl",
    "request_latency": "e2e",
}
_IP_RATE = {
    "input_tokens_per_sec": "input_tok_s",
    "output_tokens_per_sec": "output_tok_s",
    "total_tokens_per_sec": "total_tok_s",
    "requests_per_sec": "request_throughput",
}


def _inference_perf(obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    ok = _d(obj.get("successes"))
    n = _int(ok.get("count"))
    out["successful_requests"] = n
    for key, value in ok.items():
        if key == "latency" and isinstance(value, dict):
            for name, stats in value.items():
                if name in _IP_LATENCY and isinstance(stats, dict):
                    _stats(out, extra, _IP_LATENCY[name], name, stats, 1000.0)
                else:
                    _compact(f"latency_{name}", stats, extra)
        elif key == "throughput" and isinstance(value, dict):
            for name, v in value.items():
                if name in _IP_RATE and _num(v) is not None:
                    out[_IP_RATE[name]] = _num(v)
                else:
                    _compact(name, v, extra)
        elif key == "count":
            continue
        else:
            _compact(key, value, extra)
    for name, field in (("output_len", "total_output_tokens"), ("prompt_len", "total_input_tokens")):
        dist = ok.get(name)
        mean = _num(dist.get("mean")) if isinstance(dist, dict) else None
        if mean is not None and n:
            out[field] = round(mean * n)
            _derived(extra, field, f"successes.{name}.mean × successes.count")
    fails = obj.get("failures")
    if isinstance(fails, dict):
        out["failed_requests"] = _int(fails.get("count"))
        for key, value in fails.items():
            if key != "count":
                _compact(f"failures_{key}", value, extra)
    load = obj.get("load_summary")
    if isinstance(load, dict):
        rate = _num(load.get("requested_rate"))
        if rate:
            out["request_rate"] = rate
        _compact("load_summary", load, extra)
    if n and _num(out.get("request_throughput")):
        out["duration_s"] = n / out["request_throughput"]
        _derived(extra, "duration_s", "successes.count / throughput.requests_per_sec")
    for key, value in obj.items():
        if key not in ("successes", "failures", "load_summary"):
            _compact(key, value, extra)
    return _finish(out, extra, "inference-perf")


def _inference_perf_requests(items: list[dict[str, Any]]) -> dict[str, Any]:
    """inference-perf's ``per_request_lifecycle_metrics.json``: one summary of the requests."""
    out: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    ttft: list[float] = []
    tpot: list[float] = []
    e2e: list[float] = []
    gaps: list[float] = []
    ok = failed = out_tokens = in_tokens = 0
    starts: list[float] = []
    ends: list[float] = []
    for item in items:
        start, end = _num(item.get("start_time")), _num(item.get("end_time"))
        if start is not None:
            starts.append(start)
        if end is not None:
            ends.append(end)
        if item.get("error") is not None:
            failed += 1
            continue
        ok += 1
        info = _d(item.get("info"))
        resp = _d(info.get("response_metrics")) or info
        n_out = _int(resp.get("output_tokens")) or 0
        n_in = _int(info.get("input_tokens")) or 0
        out_tokens += n_out
        in_tokens += n_in
        times = [t for t in (resp.get("output_token_times") or []) if _num(t) is not None]
        chunks = [t for t in (resp.get("chunk_times") or []) if _num(t) is not None] or times
        if start is not None and end is not None:
            e2e.append((end - start) * 1000)
            if times:
                first = (times[0] - start) * 1000
                ttft.append(first)
                if n_out > 1:
                    tpot.append((end - start - (times[0] - start)) * 1000 / (n_out - 1))
        gaps += [(b - a) * 1000 for a, b in zip(chunks, chunks[1:], strict=False)]
    out.update(
        successful_requests=ok,
        failed_requests=failed,
        total_output_tokens=out_tokens,
        total_input_tokens=in_tokens,
    )
    for what, values in (("ttft", ttft), ("tpot", tpot), ("e2e", e2e), ("itl", gaps)):
        _summary(out, what, values)
    if starts and ends and max(ends) > min(starts):
        dur = max(ends) - min(starts)
        out.update(duration_s=dur, output_tok_s=out_tokens / dur, request_throughput=ok / dur)
        _derived(extra, "duration_s", "last end_time − first start_time")
        _derived(extra, "output_tok_s", "total output tokens / duration_s")
        _derived(extra, "request_throughput", "successful requests / duration_s")
    _derived(extra, "ttft", "first output_token_times − start_time, per request")
    _derived(extra, "tpot", "(end_time − first token time) / (output tokens − 1), per request")
    _derived(extra, "itl", "gaps between chunk_times (else output_token_times), pooled")
    extra["aggregated_from"] = f"{len(items)} per-request records ({ok} ok, {failed} failed)"
    extra.setdefault("not_kept", {})["requests"] = f"list of {len(items)}"
    return _finish(out, extra, "inference-perf")


# -- llm-d benchmark report (BR v0.2) ---------------------------------------------------------------
_BR_LATENCY = _IP_LATENCY
_BR_RATE = {
    "input_token_rate": "input_tok_s",
    "output_token_rate": "output_tok_s",
    "total_token_rate": "total_tok_s",
    "request_rate": "request_throughput",
}


def _br_stats(stats: dict[str, Any]) -> dict[str, Any]:
    return {("median" if q == "p50" else q): v for q, v in stats.items()}


def _br(obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    extra: dict[str, Any] = {"br_version": obj.get("version")}
    results = _d(obj.get("results"))
    perf = _d(results.get("request_performance"))
    agg = _d(perf.get("aggregate"))
    req = _d(agg.get("requests"))
    total, failures = _int(req.get("total")), _int(req.get("failures")) or 0
    if total is not None:
        out["successful_requests"] = total - failures - (_int(req.get("incomplete")) or 0)
        out["failed_requests"] = failures
    for name, field in (("output_length", "total_output_tokens"), ("input_length", "total_input_tokens")):
        dist = req.get(name)
        mean = _num(dist.get("mean")) if isinstance(dist, dict) else None
        if mean is not None and out.get("successful_requests"):
            out[field] = round(mean * out["successful_requests"])
            _derived(extra, field, f"requests.{name}.mean × successful requests")
        if isinstance(dist, dict):
            _compact(name, dist, extra)
    for name, stats in (agg.get("latency") or {}).items():
        factor = _scale(stats.get("units")) if isinstance(stats, dict) else None
        if name in _BR_LATENCY and factor is not None:
            _stats(out, extra, _BR_LATENCY[name], name, _br_stats(stats), factor)
        else:
            _compact(f"latency_{name}", stats, extra)
    for name, stats in (agg.get("throughput") or {}).items():
        if name in _BR_RATE and isinstance(stats, dict) and _num(stats.get("mean")) is not None:
            out[_BR_RATE[name]] = _num(stats["mean"])
        else:
            _compact(name, stats, extra)
    run = _d(obj.get("run"))
    time = _d(run.get("time"))
    dur = _iso_seconds(time.get("duration"))
    if dur:
        out["duration_s"] = dur
    std = _d(_d(_d(obj.get("scenario")).get("load")).get("standardized"))
    if std:
        conc, rate = _int(std.get("concurrency")), _num(std.get("rate_qps"))
        if conc:
            out["max_concurrency"] = conc
        if rate:
            out["request_rate"] = rate
        extra["tool"] = std.get("tool")
        extra["tool_version"] = std.get("tool_version")
    _compact("run", run, extra)
    for key in ("observability", "session_performance", "component_health", "profiling"):
        if results.get(key) is not None:
            extra.setdefault("not_kept", {})[f"results.{key}"] = "not the client's request figures"
    if isinstance(obj.get("scenario"), dict):
        extra.setdefault("not_kept", {})["scenario"] = "stack and load configuration"
    if perf.get("time_series") is not None:
        extra.setdefault("not_kept", {})["time_series"] = "per-interval series"
    return _finish(out, extra, "br")


# -- sniffing -----------------------------------------------------------------------------------------
Reader = Callable[[Any], dict[str, Any]]


def classify(obj: Any) -> str | None:
    """Which tool's result ``obj`` (a decoded JSON / YAML document) is, from its keys alone."""
    if isinstance(obj, list):
        first = obj[0] if obj else None
        if isinstance(first, dict) and {"start_time", "end_time", "info"} <= first.keys():
            return "inference-perf-requests"
        return None
    if not isinstance(obj, dict):
        return None
    if str(obj.get("version")) in ("0.2", "0.2.1") and isinstance(obj.get("results"), dict) and "run" in obj:
        return "br"
    benches = obj.get("benchmarks")
    if (
        isinstance(benches, list)
        and benches
        and all(isinstance(b, dict) and isinstance(b.get("metrics"), dict) for b in benches)
    ):
        return "guidellm"
    if isinstance(obj.get("aggregated_metrics"), dict):
        return "genai-bench"
    if isinstance(obj.get("successes"), dict) and ("failures" in obj or "load_summary" in obj):
        return "inference-perf"
    if any(
        isinstance(obj.get(k), dict) and "avg" in obj[k]
        for k in ("time_to_first_token", "request_latency", "request_throughput")
    ):
        return "aiperf"
    if isinstance(obj.get("metadata"), dict) and "metrics" in obj:
        return "aiperf-record"
    return None


def read_object(obj: Any) -> list[dict[str, Any]]:
    """``bench_result`` fields of each result in one decoded document (empty: not a known tool's)."""
    kind = classify(obj)
    if kind == "br":
        return [_br(obj)]
    if kind == "guidellm":
        return [_guidellm(b) for b in obj["benchmarks"]]
    if kind == "genai-bench":
        return [_genai(obj)]
    if kind == "inference-perf":
        return [_inference_perf(obj)]
    if kind == "inference-perf-requests":
        return [_inference_perf_requests([o for o in obj if isinstance(o, dict)])]
    if kind == "aiperf":
        return [_aiperf(obj)]
    return []


def read_records(objects: Iterable[Any]) -> dict[str, Any] | None:
    """One summary of AIPerf per-request records (``profile_export.jsonl``), or None when they are not."""
    records = [o for o in objects if classify(o) == "aiperf-record"]
    return _aiperf_records(records) if records else None
