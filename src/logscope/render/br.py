"""The report as llm-d's benchmark report (BR v0.2, the ``llmd-benchmark-report`` package's schema).

What goes where:

* ``run``: ``uid`` a hash of the input files' names and the lines read; ``time.duration`` the
  client's benchmark duration when there is a client result (the engine log's stamps carry no year or
  zone, so ``time.start`` / ``time.end`` are left out rather than guessed);
* ``scenario.stack``: one ``inference_engine`` component, the engine and version the log names, its
  parallelism from the effective configuration, model and accelerator ``unknown`` (the log lines
  logscope reads do not name them in a fixed form);
* ``scenario.load`` and ``results.request_performance``: the first benchmark client result of the
  run (``--bench`` or a result block in the log), only when there is one: the report's figures are the
  client's, never the engine's, in the schema's units (ms, tokens/s); mean input and output lengths are
  the client's totals / successful requests (distribution ``other``: the files give no distribution);
  without an input total the load section (whose schema requires one) is left out;
* ``results.observability``: the engine's own figure where the log has it: the requests running in
  its stable decode stretch (``running_requests``), under the engine component's label, and the run's
  preemptions (``preemptions``: the total as its mean) where the log or the server's counter (``--metrics``)
  counts them, with their source in ``logscope_preemptions_source`` (BR keeps ad-hoc keys there).

``build_br`` returns the dict; ``render_br`` validates it with the package (when installed: the
``br`` extra) and writes it as JSON; ``render_compare_br`` writes a comparison as the array of its runs'
reports. Unknown stays out: no field is filled with a zero.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from logscope.analyses.compare import Comparison
from logscope.analyses.report import Report

BR_VERSION = "0.2"
_STATS = (("mean", "mean"), ("median", "p50"), ("p90", "p90"), ("p95", "p95"), ("p99", "p99"), ("max", "max"))
__all__ = ["build_br", "render_br", "render_compare_br"]


def _uid(report: Report) -> str:
    return hashlib.sha256(json.dumps([report.files, report.lines]).encode()).hexdigest()[:32]


def _stats(values: dict[str, float], units: str) -> dict[str, Any] | None:
    out: dict[str, Any] = {"units": units}
    for ours, theirs in _STATS:
        if ours in values:
            out[theirs] = values[ours]
    return out if "mean" in out else None


def _engine_component(report: Report) -> dict[str, Any]:
    cfg = report.effective_config or {}

    def val(name: str) -> int | None:
        v = cfg.get(name)
        x = getattr(v, "value", None)
        return x if isinstance(x, int) and not isinstance(x, bool) else None

    tp, pp, dp = (
        val("tensor_parallel_size") or 1,
        val("pipeline_parallel_size") or 1,
        val("data_parallel_size") or 1,
    )
    label = f"{report.engine or 'engine'}-0"
    return {
        "metadata": {
            "schema_version": "0.0.1",
            "label": label,
            "cfg_id": hashlib.sha256(json.dumps(sorted(cfg)).encode()).hexdigest()[:32],
            "description": "read from the server log by logscope",
        },
        "standardized": {
            "kind": "inference_engine",
            "tool": report.engine or "unknown",
            "tool_version": report.engine_version or "unknown",
            "role": "replica",
            "replicas": 1,
            "model": {"name": "unknown"},
            "accelerator": {
                "model": "unknown",
                "count": tp * pp * dp,
                "parallelism": {"tp": tp, "pp": pp, "dp": dp},
            },
        },
        "native": {"args": {k: getattr(v, "value", None) for k, v in sorted(cfg.items())}},
    }


def _client(report: Report, br: dict[str, Any]) -> None:
    """The first client result as the load and the request performance."""
    if report.bench is None or not report.bench.results:
        return
    e = report.bench.results[0]
    n = e.successful_requests
    pct = e.percentiles_ms
    latency: dict[str, Any] = {}
    for ours, theirs, units in (
        ("ttft", "time_to_first_token", "ms"),
        ("tpot", "time_per_output_token", "ms/token"),
        ("itl", "inter_token_latency", "ms/token"),
        ("e2e", "request_latency", "ms"),
    ):
        s = _stats(pct.get(ours, {}), units)
        if s is not None:
            latency[theirs] = s
    aggregate: dict[str, Any] = {}
    if n is not None:
        failed = e.failed_requests
        aggregate["requests"] = {"total": n + (failed or 0)}
        if failed is not None:
            aggregate["requests"]["failures"] = failed
        for name, total in (("input_length", e.total_input_tokens), ("output_length", e.total_output_tokens)):
            if total is not None and n:
                aggregate["requests"][name] = {"units": "count", "mean": total / n}
    if latency:
        aggregate["latency"] = latency
    throughput: dict[str, Any] = {}
    if e.output_tok_s is not None:
        throughput["output_token_rate"] = {"units": "tokens/s", "mean": e.output_tok_s}
    if e.request_throughput is not None:
        throughput["request_rate"] = {"units": "queries/s", "mean": e.request_throughput}
    if throughput:
        aggregate["throughput"] = throughput
    if aggregate:
        br["results"]["request_performance"] = {"aggregate": aggregate}
    if e.duration_s:
        br["run"].setdefault("time", {})["duration"] = f"PT{e.duration_s:g}S"
    br["run"]["keywords"].append(f"client:{e.client or 'unknown'}")
    if e.total_input_tokens is None or not n:
        return  # the schema's load needs an input length: without one, no load section (never a made-up 0)
    load: dict[str, Any] = {
        "tool": e.client or "unknown",
        "tool_version": "unknown",
        "source": "unknown",
        "input_seq_len": {"distribution": "other", "value": e.total_input_tokens / n},
    }
    if e.total_output_tokens is not None:
        load["output_seq_len"] = {"distribution": "other", "value": e.total_output_tokens / n}
    if e.max_concurrency:
        load["concurrency"] = e.max_concurrency
    br["scenario"]["load"] = {
        "metadata": {"schema_version": "0.0.1", "description": f"client result of {e.file}, line {e.line}"},
        "standardized": load,
        "native": {"config": {"file": e.file, "line": e.line}},
    }


def _observability(report: Report, label: str, br: dict[str, Any]) -> None:
    agg: dict[str, Any] = {}
    sd = report.stable_decode
    if sd is not None and getattr(sd, "concurrency", None):
        agg["running_requests"] = {"units": "count", "mean": float(sd.concurrency)}
    dist = report.disturbances
    total = getattr(dist, "preemptions", None)
    source = getattr(dist, "preemptions_source", None)
    if isinstance(total, int) and source:
        # the run's total, the one figure a count of events has (BR's Statistics needs a mean); its source
        # (the log's lines, or the server's counter from --metrics) beside it, in a key BR leaves open
        agg["preemptions"] = {"units": "count", "mean": float(total)}
    if agg:
        obs: dict[str, Any] = {"components": [{"component_label": label, "aggregate": agg}]}
        if "preemptions" in agg:
            obs["logscope_preemptions_source"] = source
        br["results"]["observability"] = obs


def build_br(report: Report) -> dict[str, Any]:
    """The benchmark report's dict (BR v0.2) of a logscope report."""
    engine = _engine_component(report)
    br: dict[str, Any] = {
        "version": BR_VERSION,
        "run": {
            "uid": _uid(report),
            "description": f"logscope {report.logscope_version} analysis of {', '.join(report.files)}",
            "keywords": ["logscope"],
        },
        "scenario": {"stack": [engine]},
        "results": {},
    }
    _client(report, br)
    _observability(report, engine["metadata"]["label"], br)
    return br


def _validated(br: dict[str, Any]) -> dict[str, Any]:
    """``br`` once ``llmd_benchmark_report`` accepts it (when installed; pydantic's ValidationError if not)."""
    try:
        from llmd_benchmark_report import load_benchmark_report
    except ImportError:
        pass
    else:
        load_benchmark_report(json.loads(json.dumps(br)))
    return br


def render_br(report: Report) -> str:
    """The report as BR v0.2 JSON, validated by ``llmd_benchmark_report`` when it is installed."""
    return json.dumps(_validated(build_br(report)), indent=2) + "\n"


def render_compare_br(comparison: Comparison) -> str:
    """``compare --format br``: a BR describes one run, so a comparison is the JSON array of its runs' reports,
    BASE's runs first, each tagged in ``run.keywords`` with its side (``base``/``other``) and label: what the
    tools that read BR files compare (the verdicts stay in ``--format json``)."""
    out = []
    for role, label in (("base", comparison.base.label), ("other", comparison.other.label)):
        for report in comparison.reports(role):
            br = build_br(report)
            br["run"]["keywords"] = [*br["run"]["keywords"], role, label]
            out.append(_validated(br))
    return json.dumps(out, indent=2) + "\n"
