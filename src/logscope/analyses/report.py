"""The full report of one run: every analysis, under the keys of docs/contract.md.

A section is ``None`` when the log lacks what it needs, with the reason in ``not_applicable``.
``findings`` is filled by the digest (``logscope.digest``), not here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, cast

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.aftermath import DisturbanceSegment, disturbance_segments
from logscope.analyses.base import NotApplicable, Result, RunData, RunLike
from logscope.analyses.bench import BenchSection, bench_section
from logscope.analyses.coldstart import ColdStart, cold_start
from logscope.analyses.decode import StableDecode, stable_decode
from logscope.analyses.decode_load import DecodeUnderLoad, decode_under_load
from logscope.analyses.disturbances import Disturbances, disturbances
from logscope.analyses.effective import ConfigValue, effective_config
from logscope.analyses.kv import KvPool, kv_pool
from logscope.analyses.kvsat import KvEpisode, kv_saturation
from logscope.analyses.lifetimes import Lifetime, LifetimeChoice
from logscope.analyses.metrics import MetricsSection
from logscope.analyses.preempted import PreemptedRequest, preempted_requests
from logscope.analyses.prefill import Prefill, prefill
from logscope.analyses.quirks import quirks_for
from logscope.analyses.ranks import Ranks, ranks
from logscope.analyses.registry import ANALYSES
from logscope.analyses.requests import RequestsSection, requests_section
from logscope.analyses.slo import SloSection
from logscope.analyses.spec import SpecDecode, spec_decode
from logscope.analyses.stalls import Stalls, stalls
from logscope.events import BenchResult
from logscope.version import __version__

SECTIONS = tuple(a.name for a in ANALYSES if a.contract)  # the contract's first sections


class Coverage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lines: int
    events: int = Field(description="events of a known kind")
    unparsed: int
    unparsed_candidates: int = Field(description="unparsed lines that look like a known kind (a new format?)")


class Report(BaseModel):
    """Everything logscope derives from one run. Keys as in docs/contract.md; extend, never rename."""

    model_config = ConfigDict(extra="forbid")

    logscope_version: str
    engine: str | None
    engine_version: str | None
    files: list[str]
    lines: int
    not_applicable: dict[str, str]
    coverage: Coverage
    stable_decode: StableDecode | None
    prefill: Prefill | None
    spec_decode: SpecDecode | None
    kv_pool: KvPool | None
    cold_start: ColdStart | None
    disturbances: Disturbances | None
    findings: list[Any] = Field(default_factory=list)
    # extensions after the contract's keys, so that those keep their order
    bench: BenchSection | None = Field(None, description="client benchmark results and their sanity checks")
    stalls: Stalls | None = Field(
        None,
        description="spans with requests in flight and no progress (stalls, "
        "deadlocks, frozen engine); an empty list when none",
    )
    ranks: Ranks | None = Field(
        None,
        description="per-rank (vLLM engine, SGLang DP group) load and throughput, and "
        "imbalances; null with one engine",
    )
    decode_under_load: DecodeUnderLoad | None = Field(
        None,
        description="the decode rate at the steady running count with prefills in the windows (the usual "
        "benchmark, where every window holds prefill)",
    )
    notes: list[str] = Field(
        default_factory=list,
        description="the reader's notes on the input (a truncated or "
        "corrupt gzip, undecodable bytes, a failed read)",
    )
    lifetimes: list[Lifetime] = Field(
        default_factory=list,
        description="the server lifetimes in the input "
        "(restarts, appended logs, a folder of runs); the sections describe one",
    )
    analyzed_lifetime: LifetimeChoice | None = Field(
        None, description="which lifetime the sections describe, and why"
    )
    metrics: MetricsSection | None = Field(
        None,
        description="the server's Prometheus scrapes given with --metrics: "
        "rates, gauges, latency quantiles, the cross-check "
        "against the log; null without --metrics",
    )
    slo: SloSection | None = Field(
        None,
        description="the --slo gates: each one's measured value, source and "
        "verdict (pass, fail, unknown); null without --slo",
    )
    effective_config: dict[str, ConfigValue] | None = Field(
        None,
        description="the values the engine ran with, each with its line and origin: set (by the user), default, "
        "engine (changed by the engine) or unknown (see logscope.analyses.effective)",
    )
    kv_saturation: list[KvEpisode] | None = Field(
        None,
        description="spans of 3+ consecutive periodic lines with the KV cache 95 % full or more (an empty list "
        "when none; null when the log prints no KV usage: see logscope.analyses.kvsat)",
    )
    preempted_requests: list[PreemptedRequest] | None = Field(
        None,
        description="the requests preemption lines name (vLLM V0 logs the 1st, 51st, ... preemption); null with "
        "the reason where the log cannot name them (vLLM V1, SGLang): see logscope.analyses.preempted",
    )
    disturbance_segments: list[DisturbanceSegment] | None = Field(
        None,
        description="each burst of preemptions, retractions or retried OOMs with the decode rate before and "
        "after it, per running request (see logscope.analyses.aftermath); an empty list when none",
    )
    requests: RequestsSection | None = Field(
        None,
        description="requests as the access and request-logging lines (and --metrics) tell them: counts by "
        "status and outcome, error and abort rates, printed latencies, requests in flight; the "
        "per-request table is Run.requests() (see logscope.analyses.requests)",
    )

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def __repr__(
        self,
    ) -> str:  # short, for notebooks and terminals (logscope.render.notebook; imported on call)
        from logscope.render.notebook import report_repr

        return report_repr(self)

    def _repr_html_(self) -> str:
        from logscope.render.notebook import report_html

        return report_html(self)

    def section(self, name: str) -> BaseModel | None:
        value = getattr(self, name)
        return value if isinstance(value, BaseModel) else None


def _version() -> str:
    return __version__


def _coverage(data: RunData, lines: int) -> Coverage:
    """Lines no event covers are the unparsed ones: counted the same whether the reader kept the
    unparsed records (careful path) or skipped lines without an anchor (sparse path).

    Counted on the kind frames: the distinct (file, line) pairs the known records' ``line`` ..
    ``end_line`` ranges cover, per file as the union of the ranges sorted by first line (each adds
    what it reaches past the furthest line before it), with no set of pairs and no event object."""
    spans = _spans(data)
    known = spans.height
    candidates = 0
    if "unparsed" in data.kind_index:
        candidates = int(data.frame("unparsed")["candidate"].fill_null("").str.len_chars().gt(0).sum())
    covered = _union_length(spans)
    return Coverage(
        lines=lines, events=known, unparsed=max(0, lines - covered), unparsed_candidates=candidates
    )


def _union_length(spans: pl.DataFrame) -> int:
    """How many distinct (file, line) pairs the records ``line``..``end`` (inclusive) cover: per file,
    ranges sorted by first line, each adding what it reaches past the furthest line before it (an
    empty range, ``end < line``, covers nothing)."""
    reach = pl.col("end").cum_max().shift(1).over("file")  # the furthest line covered before this record
    gain = pl.col("end") - pl.max_horizontal(pl.col("line") - 1, reach.fill_null(pl.col("line") - 1))
    total = (
        spans.filter(pl.col("end") >= pl.col("line"))
        .sort(["file", "line"])
        .select(gain.clip(lower_bound=0).sum())
        .item()
    )
    return int(total or 0)


def _spans(data: RunData) -> pl.DataFrame:
    """(file, line, end) of every known record: its first and last physical line."""
    parts = [
        data.frame(kind).select(
            pl.col("file"),
            pl.col("line").cast(pl.Int64),
            pl.when(pl.col("end_line").fill_null(0) == 0)
            .then(pl.col("line"))
            .otherwise(pl.col("end_line"))
            .cast(pl.Int64)
            .alias("end"),
        )
        for kind in data.kind_index
        if kind != "unparsed"
    ]
    if not parts:
        return pl.DataFrame(schema={"file": pl.Utf8, "line": pl.Int64, "end": pl.Int64})
    return pl.concat(parts)


def _last_line(data: RunData) -> int:
    """The last physical line any record reaches (the line count when the reader gave none)."""
    ends = [
        data.frame(kind)
        .select(
            pl.when(pl.col("end_line").fill_null(0) == 0)
            .then(pl.col("line"))
            .otherwise(pl.col("end_line"))
            .max()
        )
        .item()
        for kind in data.kind_index
    ]
    return max((int(x) for x in ends if x is not None), default=0)


def build_report(run: RunLike | RunData) -> Report:
    """Run every analysis on ``run`` and gather the results."""
    data = RunData.of(run)
    stats = getattr(run, "stats", None)
    lines = int(getattr(stats, "lines", 0) or 0) or _last_line(data)
    sd = stable_decode(data)
    results: dict[str, BaseModel] = {
        "stable_decode": sd,
        "prefill": prefill(data, sd),
        "spec_decode": spec_decode(data, sd),
        "kv_pool": kv_pool(data),
        "cold_start": cold_start(data),
        "disturbances": disturbances(data, sd),
    }
    for name, res in results.items():  # version quirks (logscope.analyses.quirks) go into the method sentence
        said = " ".join(q.text for q in quirks_for(data.engine, data.engine_version, name))
        if said and isinstance(res, Result):
            results[name] = res.model_copy(update={"method": f"{res.method} {said}"})
    not_applicable = {k: v.reason for k, v in results.items() if isinstance(v, NotApplicable)}
    dist = results["disturbances"]
    if isinstance(dist, Disturbances) and dist.preemptions_not_applicable:
        not_applicable["disturbances.preemptions"] = dist.preemptions_not_applicable
    sections: dict[str, Any] = {k: (None if isinstance(v, NotApplicable) else v) for k, v in results.items()}
    dul = decode_under_load(data)
    if isinstance(dul, NotApplicable):
        not_applicable["decode_under_load"] = dul.reason
    sections["decode_under_load"] = None if isinstance(dul, NotApplicable) else dul
    sections["bench"] = bench_section(
        [cast(BenchResult, data.events[i]) for i in data.kind_index.get("bench_result", ())],
        sections["stable_decode"],
        sections["prefill"],
        sections["decode_under_load"],
        data,
    )
    if sections["bench"] is None:
        not_applicable["bench"] = (
            "no client benchmark result in the input (add the client's output with --bench)"
        )
    st = stalls(data)
    if isinstance(st, NotApplicable):
        not_applicable["stalls"] = st.reason
    sections["stalls"] = None if isinstance(st, NotApplicable) else st
    rk = ranks(data)
    if isinstance(rk, NotApplicable):
        not_applicable["ranks"] = rk.reason
    sections["ranks"] = None if isinstance(rk, NotApplicable) else rk
    optional: dict[
        str, Callable[[RunData], Any]
    ] = {  # null with the reason in not_applicable when not applicable
        "effective_config": effective_config,
        "kv_saturation": kv_saturation,
        "preempted_requests": preempted_requests,
        "disturbance_segments": disturbance_segments,
        "requests": requests_section,
    }
    for name, fn in optional.items():
        res = fn(data)
        if isinstance(res, NotApplicable):
            not_applicable[name] = res.reason
        sections[name] = None if isinstance(res, NotApplicable) else res
    return Report(
        logscope_version=_version(),
        engine=data.engine,
        engine_version=data.engine_version,
        files=data.files,
        lines=lines,
        not_applicable=not_applicable,
        coverage=_coverage(data, lines),
        findings=[],
        notes=[str(n) for n in getattr(stats, "notes", None) or []],
        **sections,
    )
