"""Requests: what the log says request by request (report key ``requests``).

Two kinds of line speak of requests, and neither is always there:

- uvicorn's access line (on by default in both engines): one per answered HTTP request, with its
  method, path and status, written when the response *starts* (for a streamed completion that is
  right after it was accepted, so the line says nothing of how long it ran or how it ended);
- request logging (vLLM ``--enable-log-requests``, SGLang ``--log-requests``): ``Received``,
  ``Added``, ``Aborted``, ``failed`` lines by request id, and in SGLang (and vLLM V0) a ``Finish``
  line; SGLang's carries the request's token counts and its ``e2e_latency``. vLLM V1 prints no
  completion line at all: a received request with no later line of its own ended *somewhere*, and
  its outcome is unknown (not "unfinished").

The per-request table (``request_frame``, ``Run.requests()``) has one row per request id when
request logging is on (its lines joined by id: vLLM's ``Added``/``Aborted request(s)`` id is the
``Received`` id plus a ``-<hex>`` suffix), else one row per inference access line (probes such as
``GET /metrics`` or ``/health`` left out: a monitor, not a client). The summary counts statuses and
outcomes, gives the error and abort rates with what they are a share of, latency percentiles only
where the log prints a latency per request, and the requests in flight over time from the engine's
own periodic lines (vLLM stats line ``Running`` + ``Waiting``, SGLang ``#running-req`` +
``#queue-req``). A count the log cannot give is null with the reason, never 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.base import NotApplicable, Result, RunData
from logscope.analyses.nostats import NOT_WORK
from logscope.analyses.series import main_series

QUANTILES = (0.5, 0.9, 0.95, 0.99)
LATENCY_FIELDS = {"e2e_s": "end-to-end", "ttft_s": "time to first token", "queue_s": "queue time"}
_END_PHASES = ("finished", "aborted", "error")

FRAME_SCHEMA: dict[str, pl.DataType] = {
    "request_id": pl.Utf8(),
    "source": pl.Utf8(),
    "file": pl.Utf8(),
    "line": pl.Int64(),
    "t_s": pl.Float64(),
    "time": pl.Utf8(),
    "added_t_s": pl.Float64(),
    "end_t_s": pl.Float64(),
    "end_line": pl.Int64(),
    "outcome": pl.Utf8(),
    "status": pl.Int64(),
    "method": pl.Utf8(),
    "path": pl.Utf8(),
    "prompt_tokens": pl.Int64(),
    "output_tokens": pl.Int64(),
    "e2e_s": pl.Float64(),
    "ttft_s": pl.Float64(),
    "queue_s": pl.Float64(),
    "reason": pl.Utf8(),
    "repeated": pl.Int64(),
    "after_t_s": pl.Float64(),
}


class LatencyStats(BaseModel):
    """Percentiles of one per-request latency the log printed."""

    model_config = ConfigDict(extra="forbid")

    count: int = Field(description="requests whose line printed it")
    mean: float
    p50: float
    p90: float
    p95: float
    p99: float
    max: float
    source: str = Field(description="which lines and field the values come from")


class InFlightPoint(BaseModel):
    model_config = ConfigDict(extra="forbid")

    t_s: float
    running: int
    waiting: int | None


class RequestsSection(Result):
    """Requests as the log (and ``--metrics``) tell them: counts by status and outcome, rates, latency, load."""

    sources: list[str] = Field(description="the kinds of line (and metrics) the figures come from")
    table_rows: int = Field(
        description="rows of the per-request table (Run.requests()): request ids when request "
        "logging is on, else inference access lines"
    )
    table_source: str = Field(description='"request log" or "access log"')
    access_lines: int | None = Field(
        description="uvicorn access lines, probes included; null: none in the log"
    )
    inference_requests: int | None = Field(description="access lines of inference requests (probes left out)")
    by_status: dict[str, int] = Field(
        default_factory=dict, description="inference access lines per HTTP status"
    )
    probes: dict[str, int] = Field(
        default_factory=dict,
        description="probe and metadata calls: 'METHOD path status' -> lines (not counted as requests)",
    )
    http_error_rate_pct: float | None = Field(
        description="4xx + 5xx of the inference access lines, percent; null without access lines"
    )
    server_error_rate_pct: float | None = Field(description="5xx of the inference access lines, percent")
    logged_requests: int | None = Field(
        description="distinct request ids in request logging; null when it is off"
    )
    outcomes: dict[str, int] = Field(
        default_factory=dict,
        description="request-logged requests by outcome: finished, "
        "aborted, error, unknown (no end line: vLLM V1 prints none for a completed request)",
    )
    abort_rate_pct: float | None = Field(
        description="aborted / logged requests, percent; null when request logging is off"
    )
    failure_rate_pct: float | None = Field(
        description="failed (`Request X failed`) / logged requests, percent"
    )
    latency: dict[str, LatencyStats] = Field(
        default_factory=dict,
        description="per-request latencies the log prints "
        "(SGLang `Finish:` e2e_latency), seconds; empty when none",
    )
    latency_not_applicable: str | None = Field(None, description="why `latency` is empty")
    in_flight: list[InFlightPoint] = Field(
        default_factory=list, description="requests in the engine (running, waiting) at each periodic line"
    )
    in_flight_source: str | None = None
    in_flight_max: int | None = Field(
        None, description="the most requests running + waiting at one periodic line"
    )
    in_flight_not_applicable: str | None = None
    metrics_finished_by_reason: dict[str, float] = Field(
        default_factory=dict,
        description="with --metrics: the server's finished requests by reason (vllm:request_success)",
    )
    metrics_error_rate_pct: float | None = Field(
        None, description="with --metrics: finished with reason error / all finished, percent"
    )
    metrics_abort_rate_pct: float | None = Field(
        None, description="with --metrics: finished with reason abort / all finished, percent"
    )


# -- the per-request table -------------------------------------------------------------------------


def _work() -> pl.Expr:
    """Inference access lines: not a probe, metadata or tokenizer call (``nostats.NOT_WORK``)."""
    return ~pl.col("path").str.split("?").list.first().str.contains(NOT_WORK.pattern)


def access_rows(data: RunData) -> pl.DataFrame:
    """One row per inference access line, in the table's columns."""
    acc = data.frame("http_access")
    if acc.height == 0:
        return pl.DataFrame(schema=FRAME_SCHEMA)
    acc = acc.filter(_work())
    return (
        _after(data, acc)
        .select(
            pl.lit(None, pl.Utf8).alias("request_id"),
            pl.lit("access log").alias("source"),
            "file",
            "line",
            "t_s",
            "time",
            pl.lit(None, pl.Float64).alias("added_t_s"),
            pl.lit(None, pl.Float64).alias("end_t_s"),
            pl.lit(None, pl.Int64).alias("end_line"),
            pl.when(pl.col("status") >= 400)
            .then(pl.lit("http_error"))
            .otherwise(pl.lit("answered"))
            .alias("outcome"),
            "status",
            "method",
            "path",
            pl.lit(None, pl.Int64).alias("prompt_tokens"),
            pl.lit(None, pl.Int64).alias("output_tokens"),
            pl.lit(None, pl.Float64).alias("e2e_s"),
            pl.lit(None, pl.Float64).alias("ttft_s"),
            pl.lit(None, pl.Float64).alias("queue_s"),
            pl.lit(None, pl.Utf8).alias("reason"),
            "repeated",
            "after_t_s",
        )
        .cast(FRAME_SCHEMA)  # type: ignore[arg-type]
    )


def _after(data: RunData, df: pl.DataFrame) -> pl.DataFrame:
    """``df`` with ``after_t_s``: its own ``t_s``, else that of the last stamped line before it (vLLM's plain
    access lines carry no time; the stamp before them is when they were written, give or take a stats interval)."""
    if df.height == 0 or df["t_s"].null_count() == 0:
        return df.with_columns(pl.col("t_s").alias("after_t_s"))
    stamps = pl.DataFrame(
        {"seq": list(range(len(data.events))), "prev": [e.t_s for e in data.events]},
        schema={"seq": pl.Int64, "prev": pl.Float64},
    ).with_columns(pl.col("prev").forward_fill())
    return (
        df.join(stamps, on="seq", how="left", maintain_order="left")
        .with_columns(pl.coalesce("t_s", "prev").alias("after_t_s"))
        .drop("prev")
    )


def logged_rows(data: RunData) -> pl.DataFrame:
    """One row per request id of request logging: its lines joined by id (see the module docstring)."""
    req = data.frame("request")
    if req.height == 0:
        return pl.DataFrame(schema=FRAME_SCHEMA)
    # a line naming several ids ("Aborted request(s) A,B.") stands for each
    req = req.with_columns(pl.col("request_id").str.split(",")).explode("request_id")
    received = req.filter(pl.col("phase") == "received")["request_id"].drop_nulls().unique()
    parent = pl.col("request_id").str.replace(r"-[0-9a-fA-F]+$", "")
    req = req.with_columns(
        pl.when(pl.col("request_id").is_in(received.implode()) | ~parent.is_in(received.implode()))
        .then(pl.col("request_id"))
        .otherwise(parent)
        .alias("key")
    )
    ended = pl.col("phase").is_in(_END_PHASES)
    # error beats aborted beats finished when a request has several end lines (vLLM: `Aborted request(s)` + `aborted.`)
    rank = pl.col("phase").replace_strict(
        {"error": 0, "aborted": 1, "finished": 2}, default=9, return_dtype=pl.Int64
    )
    out = (
        req.sort("seq")
        .group_by("key", maintain_order=True)
        .agg(
            pl.col("file").first(),
            pl.col("line").min(),
            pl.col("t_s").filter(pl.col("phase") == "received").first().alias("received_t_s"),
            pl.col("t_s").first().alias("first_t_s"),
            pl.col("time").first(),
            pl.col("t_s").filter(pl.col("phase") == "added").first().alias("added_t_s"),
            pl.col("t_s").filter(ended).first().alias("end_t_s"),
            pl.col("line").filter(ended).first().alias("end_line"),
            pl.col("phase").filter(ended).sort_by(rank.filter(ended)).first().alias("outcome"),
            pl.col("prompt_tokens").max(),
            pl.col("output_tokens").max(),
            pl.col("e2e_s").max(),
            pl.col("ttft_s").max(),
            pl.col("queue_s").max(),
            pl.col("reason").drop_nulls().first(),
            pl.col("repeated").max(),
        )
    )
    return out.select(
        pl.col("key").alias("request_id"),
        pl.lit("request log").alias("source"),
        "file",
        "line",
        pl.coalesce("received_t_s", "first_t_s").alias("t_s"),
        "time",
        "added_t_s",
        "end_t_s",
        "end_line",
        pl.col("outcome").fill_null("unknown"),
        pl.lit(None, pl.Int64).alias("status"),
        pl.lit(None, pl.Utf8).alias("method"),
        pl.lit(None, pl.Utf8).alias("path"),
        "prompt_tokens",
        "output_tokens",
        "e2e_s",
        "ttft_s",
        "queue_s",
        "reason",
        "repeated",
        pl.coalesce("received_t_s", "first_t_s").alias("after_t_s"),
    ).cast(FRAME_SCHEMA)  # type: ignore[arg-type]


def request_frame(data: RunData) -> pl.DataFrame:
    """The per-request table: request-logged ids when request logging is on, else inference access lines."""
    if "request_frame" not in data.memo:
        rows = logged_rows(data)
        data.memo["request_frame"] = rows if rows.height else access_rows(data)
    out: pl.DataFrame = data.memo["request_frame"]
    return out


# -- the summary -----------------------------------------------------------------------------------


def _pct(part: float, whole: float) -> float | None:
    return round(100.0 * part / whole, 3) if whole > 0 else None


def _latency(rows: pl.DataFrame, engine: str | None) -> tuple[dict[str, LatencyStats], str | None]:
    out: dict[str, LatencyStats] = {}
    for name in LATENCY_FIELDS:
        vals = sorted(float(v) for v in rows[name].drop_nulls().to_list()) if name in rows.columns else []
        if not vals:
            continue
        col = pl.Series(name, vals, pl.Float64)
        q = [float(col.quantile(p, interpolation="linear") or 0.0) for p in QUANTILES]
        src = ("SGLang `Finish:` lines' meta_info" if engine == "sglang" else "request lines") + f" ({name})"
        out[name] = LatencyStats(
            count=len(vals),
            mean=sum(vals) / len(vals),
            p50=q[0],
            p90=q[1],
            p95=q[2],
            p99=q[3],
            max=vals[-1],
            source=src,
        )
    if out:
        return out, None
    if rows.height and rows["source"][0] == "request log":
        why = (
            "the request lines print no per-request latency (vLLM prints none; SGLang's `Finish:` line does, with "
            "--log-requests at a level that keeps its meta_info)"
        )
    else:
        why = (
            "access lines carry no duration (uvicorn writes the line when the response starts), and request "
            "logging is off; latency percentiles need the client's result (--bench) or the server's histograms "
            "(--metrics)"
        )
    return out, why


def requests_section(data: RunData) -> RequestsSection | NotApplicable:
    """The ``requests`` section of the report (see the module docstring)."""
    acc = data.frame("http_access")
    logged = logged_rows(data)
    if acc.height == 0 and logged.height == 0:
        return NotApplicable(
            reason="no uvicorn access line and no request-logging line in the log (access log and "
            "request logging off, or a log cut before any request): nothing counts requests"
        )
    table = request_frame(data)
    sources: list[str] = []
    access_lines = inference = None
    by_status: dict[str, int] = {}
    probes: dict[str, int] = {}
    http_rate = server_rate = None
    if acc.height:
        work = acc.filter(_work())
        access_lines = int(acc["repeated"].sum())
        inference = int(work["repeated"].sum())
        by_status = {
            str(s): int(n)
            for s, n in work.group_by("status").agg(pl.col("repeated").sum()).sort("status").iter_rows()
        }
        probe = (
            acc.filter(~_work())
            .group_by("method", "path", "status")
            .agg(pl.col("repeated").sum())
            .sort("repeated", "path", descending=[True, False])
        )
        probes = {f"{m} {p} {s}": int(n) for m, p, s, n in probe.iter_rows()}
        bad = int(work.filter(pl.col("status") >= 400)["repeated"].sum())
        http_rate = _pct(bad, inference)
        server_rate = _pct(int(work.filter(pl.col("status") >= 500)["repeated"].sum()), inference)
        sources.append(f"uvicorn access lines ({access_lines:,}, {inference:,} of inference requests)")
    logged_n = abort_rate = failure_rate = None
    outcomes: dict[str, int] = {}
    if logged.height:
        logged_n = logged.height
        counted = logged.group_by("outcome").len()
        outcomes = {o: int(n) for o, n in counted.sort("outcome").iter_rows()}
        abort_rate = _pct(outcomes.get("aborted", 0), logged_n)
        failure_rate = _pct(outcomes.get("error", 0), logged_n)
        sources.append(f"request logging ({data.frame('request').height:,} lines, {logged_n:,} request ids)")
    latency, latency_na = _latency(table, data.engine)
    points, in_src, in_na = _in_flight(data)
    method = (
        f"The per-request table (Run.requests()) has one row per "
        f"{'request id of request logging' if logged.height else 'inference access line'}."
    )
    if acc.height:
        method += (
            " Inference access lines are those not to a probe, metadata or tokenizer path (/metrics, /health, "
            "/v1/models, /tokenize ...); the HTTP error rate is their 4xx + 5xx over all of them, each line "
            "counted `repeated` times."
        )
    if logged.height:
        method += (
            " Request logging's lines are joined by id (an `Added`/`Aborted request(s)` id is the `Received` "
            "id plus a `-<hex>` suffix); a request's outcome is its end line (error before aborted before "
            "finished), `unknown` when it has none; abort and failure rates are over the logged ids."
        )
    if latency:
        method += " Latency percentiles (linear interpolation between the closest ranks) from the latencies printed."
    if points:
        method += " Requests in flight: running + waiting at each of the engine's periodic lines."
    if logged.height and outcomes.get("unknown") and data.engine == "vllm":
        method += (
            " vLLM V1 prints no line when a request completes (`Finished request` is V0 only), so `unknown` "
            "holds the requests that completed normally, and any the log lost."
        )
    return RequestsSection(
        method=method,
        sources=sources,
        table_rows=table.height,
        table_source=str(table["source"][0])
        if table.height
        else ("request log" if logged.height else "access log"),
        access_lines=access_lines,
        inference_requests=inference,
        by_status=by_status,
        probes=probes,
        http_error_rate_pct=http_rate,
        server_error_rate_pct=server_rate,
        logged_requests=logged_n,
        outcomes=outcomes,
        abort_rate_pct=abort_rate,
        failure_rate_pct=failure_rate,
        latency=latency,
        latency_not_applicable=latency_na,
        in_flight=points,
        in_flight_source=in_src,
        in_flight_max=max((p.running + (p.waiting or 0) for p in points), default=None),
        in_flight_not_applicable=in_na,
    )


def _in_flight(data: RunData) -> tuple[list[InFlightPoint], str | None, str | None]:
    s = main_series(data)
    if s is None or not s.samples:
        return (
            [],
            None,
            (
                "the log has no periodic stats line (vLLM `Running: N reqs`, SGLang `#running-req`) to count "
                "the requests in the engine"
            ),
        )
    pts = [InFlightPoint(t_s=x.t_s, running=x.running, waiting=x.waiting) for x in s.samples]
    return pts, f"{s.source} ({s.label}): running + waiting at each line", None


def add_metrics(section: RequestsSection, metrics: Any) -> None:
    """Fill the server's own request counts from ``--metrics`` (``vllm:request_success`` by finished_reason)."""
    by: dict[str, float] = dict(getattr(metrics, "finished_by_reason", None) or {})
    if not by:
        return
    total = sum(by.values())
    section.metrics_finished_by_reason = by
    section.metrics_error_rate_pct = _pct(by.get("error", 0.0), total)
    section.metrics_abort_rate_pct = _pct(by.get("abort", 0.0), total)
    family = getattr(getattr(metrics, "counters", {}).get("requests_finished"), "family", "request_success")
    section.sources.append(f"metrics ({family}_total by finished_reason, last scrape)")


def summary(rep: Any) -> dict[str, Any] | None:
    """The request figures of a report as one flat dict (for ``compare`` and other callers); None when the
    report has no ``requests`` section. Keys: inference_requests, http_error_rate_pct, server_error_rate_pct,
    logged_requests, abort_rate_pct, failure_rate_pct, in_flight_max, and ``<latency>_p50/_p95/_p99`` (seconds)."""
    sec = getattr(rep, "requests", None)
    if sec is None:
        return None
    out: dict[str, Any] = {
        k: getattr(sec, k)
        for k in (
            "inference_requests",
            "http_error_rate_pct",
            "server_error_rate_pct",
            "logged_requests",
            "abort_rate_pct",
            "failure_rate_pct",
            "in_flight_max",
            "metrics_error_rate_pct",
            "metrics_abort_rate_pct",
        )
    }
    for name, st in sec.latency.items():
        for q in ("p50", "p95", "p99"):
            out[f"{name[:-2]}_{q}_s"] = getattr(st, q)
    return out


__all__: Sequence[str] = ("RequestsSection", "request_frame", "requests_section", "summary", "add_metrics")
