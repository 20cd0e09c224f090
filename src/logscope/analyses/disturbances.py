"""Disturbances: OOMs, runtime JIT compiles, preemptions, retractions and errors, on the timeline.

A line printed by every rank is one fact seen N times: counts are per line (``oom`` = 32 for four
rounds on eight ranks) with the per-rank split beside them, and the timeline groups the copies of one
fact (same kind, same second, same text) into one entry with its ranks. Each entry is placed in
its phase (start-up before the ready line, serving, shutdown after the last busy stats/decode line)
and flagged when it falls inside a measurement window: the stable decode segment, a prefill window,
or start-up.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.base import NotApplicable, Result, RunData, median
from logscope.analyses.decode import StableDecode
from logscope.analyses.series import main_series
from logscope.events import Event

_NUM = re.compile(r"\d+(?:\.\d+)?")


class TimelineEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str
    t_s: float | None
    time: str | None
    file: str
    line: int
    ranks: list[str] = Field(default_factory=list)
    count: int = 1
    phase: str = Field(description='"startup", "serving" or "shutdown"')
    detail: str = ""
    overlaps: list[str] = Field(default_factory=list, description="measurement windows this falls in")


class ErrorEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: str
    line: int
    t_s: float | None
    exception: str | None
    message: str
    phase: str
    benign_shutdown: bool = Field(
        False, description="after the shutdown began (e.g. vLLM's EngineDeadError on SIGINT)"
    )


class Disturbances(Result):
    oom: int
    oom_by_rank: dict[str, int]
    oom_retried: int
    oom_rounds: int | None = Field(None, description="OOMs per rank when every rank saw the same number")
    oom_requested_gib: float | None = None
    oom_free_gib: float | None = None
    runtime_compiles: int
    runtime_compiles_by_rank: dict[str, int] = Field(default_factory=dict)
    preemptions: int | None = Field(
        description="null when the log cannot count them (reason in `preemptions_not_applicable`)"
    )
    retractions: int
    retracted_requests: int = 0
    errors: int = Field(description="error records, less those of a clean shutdown (`benign_errors`)")
    benign_errors: int = Field(
        0,
        description="errors after a clean stop began (e.g. vLLM's EngineDeadError on SIGINT): "
        "kept in `error_list`, not counted in `errors`",
    )
    preemptions_not_applicable: str | None = Field(None, description="why `preemptions` is null")
    preemptions_source: str | None = Field(
        None,
        description="where `preemptions` comes from: the log's lines, or the "
        "server's counter given with --metrics when the log cannot count them",
    )
    error_list: list[ErrorEntry] = Field(default_factory=list)
    timeline: list[TimelineEntry] = Field(default_factory=list)
    overlapping: list[str] = Field(
        default_factory=list, description="one sentence per disturbance kind in a window"
    )
    http_errors: int | None = Field(
        None,
        description="uvicorn access lines with a 4xx/5xx status; null when the log holds no access line (access log off)",
    )
    http_errors_by_status: dict[str, int] = Field(default_factory=dict)
    aborts: int | None = Field(
        None, description="requests aborted (request logging); null when the log holds no request line"
    )
    request_errors: int | None = Field(
        None,
        description="requests that failed (`Request X failed ...`); null when the log holds no request line",
    )


def _rank(e: Event) -> str:
    if e.tp_rank is not None:
        return f"TP{e.tp_rank}" if e.dp_rank is None else f"DP{e.dp_rank} TP{e.tp_rank}"
    gpu = getattr(e, "gpu", None)
    if gpu is not None:
        return f"GPU{gpu}"
    if e.dp_rank is not None:
        return f"DP{e.dp_rank}"
    return e.process.split(" pid=")[0] if e.process else "-"


def _detail(e: Event) -> str:
    for attr in ("message", "detail", "exception"):
        v = getattr(e, attr, None)
        if isinstance(v, str) and v:
            return v.split("\n", 1)[0][:240]
    if e.kind == "preemption":
        return f"request {getattr(e, 'request_id', None)}"
    if e.kind == "retract":
        return f"{getattr(e, 'retracted_reqs', None)} requests retracted"
    if e.kind == "throughput":
        return f"{getattr(e, 'preemptions', 0)} preemptions in the stats window"
    return e.kind


class _Windows:
    """Measurement windows by name, each a sorted list of (start, end) for a bisect lookup."""

    def __init__(self) -> None:
        self.spans: dict[str, list[tuple[float, float]]] = {}

    def add(self, name: str, start: float, end: float) -> None:
        self.spans.setdefault(name, []).append((start, end))

    def done(self) -> _Windows:
        for spans in self.spans.values():
            spans.sort()
        self._ends: dict[str, list[float]] = {}
        for name, spans in self.spans.items():
            top, ends = float("-inf"), []
            for _s, e in spans:  # the furthest end among the windows so far
                top = max(top, e)
                ends.append(top)
            self._ends[name] = ends
        return self

    def at(self, t: float | None) -> list[str]:
        if t is None:
            return []
        out = []
        for name, spans in self.spans.items():
            k = bisect.bisect_right(spans, (t, float("inf"))) - 1  # the last window starting at or before t
            if k >= 0 and self._ends[name][k] >= t:
                out.append(name)
        return sorted(out)


def _windows(data: RunData, stable: StableDecode | NotApplicable) -> _Windows:
    w = _Windows()
    ready = data.ready_seq()
    t_ready = data.time_at(ready) if ready is not None else None
    if t_ready is not None:
        w.add("startup", float("-inf"), t_ready)
    if isinstance(stable, StableDecode):
        w.add("stable decode", stable.start_t_s - (stable.window_s or 0.0), stable.end_t_s)
    s = main_series(data)
    if s is not None and s.source.startswith("vLLM"):
        iv = s.interval or 10.0
        for x in s.samples:
            if x.prompt_tok_s:
                w.add("prefill", x.t_s - iv, x.t_s)
    pf = data.frame("prefill_batch")["t_s"].drop_nulls().to_list()
    for t in pf:
        w.add("prefill", t - 1.0, t)
    return w.done()


def disturbances(data: RunData, stable: StableDecode | NotApplicable | None = None) -> Disturbances:
    """OOMs, runtime compiles, preemptions, retractions and errors of the run (see the module docstring)."""
    if stable is None:
        from logscope.analyses.decode import stable_decode

        stable = stable_decode(data)
    ev = data.events
    ready = data.ready_seq()
    shutdown_seq = next((i for i, e in enumerate(ev) if "[shutdown]" in (e.raw or "")), None)
    if shutdown_seq is not None and any(e.kind == "error" for e in ev[:shutdown_seq]):
        shutdown_seq = None  # the shutdown followed a failure: what comes after it is part of the failure
    windows = _windows(data, stable)

    busy = any(e.kind in ("throughput", "decode_batch") for e in ev)

    def phase(i: int, e: Event) -> str:
        if (ready is not None and i < ready) or (ready is None and not busy):
            return "startup"
        if shutdown_seq is not None and i > shutdown_seq:
            return "shutdown"
        return "serving"

    picked: list[tuple[int, Event]] = []
    for i, e in enumerate(ev):
        if e.kind in ("oom", "preemption", "retract", "error"):
            picked.append((i, e))
        elif e.kind == "compile" and (
            getattr(e, "stage", None) == "runtime_jit"
            or (ready is not None and i > ready and getattr(e, "seconds", None) is not None)
        ):
            picked.append((i, e))
        elif e.kind == "throughput" and getattr(e, "preemptions", None):
            picked.append((i, e))

    oom = [(i, e) for i, e in picked if e.kind == "oom"]
    oom_by_rank: Counter[str] = Counter()
    for _i, e in oom:
        oom_by_rank[_rank(e)] += e.repeated
    jit = [(i, e) for i, e in picked if e.kind == "compile"]
    jit_by_rank: Counter[str] = Counter()
    for _i, e in jit:
        jit_by_rank[_rank(e)] += e.repeated
    preempt = sum(int(getattr(e, "preemptions", 0) or 0) for _i, e in picked if e.kind == "throughput")
    preempt += sum(e.repeated for _i, e in picked if e.kind == "preemption")
    retract = [e for _i, e in picked if e.kind == "retract"]

    # timeline: copies of one fact on several ranks become one entry
    groups: dict[tuple[Any, ...], TimelineEntry] = {}
    for i, e in picked:
        detail = _detail(e)
        key = (e.kind, e.t_s, _NUM.sub("#", detail))
        t = data.time_at(i)
        overlaps = windows.at(t)
        if key in groups:
            g = groups[key]
            rk = _rank(e)
            groups[key] = g.model_copy(
                update={"count": g.count + e.repeated, "ranks": g.ranks if rk in g.ranks else [*g.ranks, rk]}
            )
            continue
        groups[key] = TimelineEntry(
            kind=e.kind,
            t_s=t,
            time=e.time,
            file=e.file,
            line=e.line,
            ranks=[_rank(e)],
            count=e.repeated,
            phase=phase(i, e),
            detail=detail,
            overlaps=overlaps,
        )
    timeline = list(groups.values())

    overlapping: list[str] = []
    for kind, label in (
        ("oom", "OOM"),
        ("compile", "runtime compile"),
        ("preemption", "preemption"),
        ("throughput", "preemption"),
        ("retract", "retraction"),
        ("error", "error"),
    ):
        lines: Counter[str] = Counter()
        bursts: Counter[str] = Counter()
        for entry in timeline:
            if entry.kind != kind:
                continue
            for w in entry.overlaps:
                if w != "startup":
                    lines[w] += entry.count
                    bursts[w] += 1
        for w in sorted(lines):
            overlapping.append(
                f"{lines[w]} {label} line(s) ({bursts[w]} distinct moment(s)) fall inside {w} "
                f"windows: those figures include their cost"
            )

    errors = [
        ErrorEntry(
            file=e.file,
            line=e.line,
            t_s=data.time_at(i),
            exception=getattr(e, "exception", None),
            message=str(getattr(e, "message", ""))[:300],
            phase=phase(i, e),
            benign_shutdown=shutdown_seq is not None and i > shutdown_seq,
        )
        for i, e in picked
        if e.kind == "error"
    ]
    ranks = set(oom_by_rank.values())
    req = [float(v) for _i, e in oom if (v := getattr(e, "requested_gib", None)) is not None]
    free = [float(v) for _i, e in oom if (v := getattr(e, "free_gib", None)) is not None]
    method = (
        "Counts are lines (times `repeated` for Ray's dedup), per rank beside them; runtime compiles are "
        "`compile` events of stage runtime_jit or timed compiles after the ready line; preemptions add the "
        "stats line's per-window `Preemptions:` and V0 preemption lines; the timeline groups one fact's copies "
        "across ranks (same kind, second and text) and flags the measurement windows each falls in "
        "(stable decode segment, prefill windows, start-up)."
    )
    preempt_na = _preemptions_unknown(data)
    preemptions: int | None = preempt
    preempt_src: str | None = (
        "the log (SGLang prints retractions, counted in `retractions`, and no preemption line)"
        if data.engine == "sglang"
        else "the log (stats lines' `Preemptions:`, preemption lines)"
    )
    if preempt_na is not None:
        preemptions = preempt_src = None
        method += f" Preemptions unknown: {preempt_na}"
    benign = sum(1 for x in errors if x.benign_shutdown)
    if benign:
        method += (
            f" {benign} error(s) came after a clean stop began (`[shutdown]` with no error before it, e.g. "
            "vLLM's EngineDeadError on SIGINT): listed, not counted in `errors`."
        )
    http_errors, by_status, aborts, request_errors = request_failures(data)
    if http_errors is not None or aborts is not None:
        method += (
            " HTTP errors are uvicorn access lines with a 4xx/5xx status; aborts count aborted requests once "
            "(vLLM prints `Aborted request(s) ID-x` and `Request ID aborted.` for one abort)."
        )
    return Disturbances(
        method=method,
        oom=sum(oom_by_rank.values()),
        oom_by_rank=dict(sorted(oom_by_rank.items())),
        oom_retried=sum(e.repeated for _i, e in oom if getattr(e, "retry", False)),
        oom_rounds=ranks.pop() if len(ranks) == 1 and oom_by_rank else None,
        oom_requested_gib=round(median(req), 2) if req else None,
        oom_free_gib=round(median(free), 2) if free else None,
        runtime_compiles=sum(jit_by_rank.values()),
        runtime_compiles_by_rank=dict(sorted(jit_by_rank.items())),
        preemptions=preemptions,
        preemptions_not_applicable=preempt_na,
        preemptions_source=preempt_src,
        retractions=len(retract),
        retracted_requests=sum(int(getattr(e, "retracted_reqs", 0) or 0) for e in retract),
        errors=len(errors) - benign,
        benign_errors=benign,
        error_list=errors,
        timeline=timeline,
        overlapping=overlapping,
        http_errors=http_errors,
        http_errors_by_status=by_status,
        aborts=aborts,
        request_errors=request_errors,
    )


def _preemptions_unknown(data: RunData) -> str | None:
    """Why the log cannot count preemptions, or None when it can (vLLM only; SGLang logs each retraction).

    vLLM V0 logs the first preemption and every 50th after it, so no such line means none. V1 logs no
    preemption line; its stats line prints ``Preemptions: N`` only when N > 0 (late 2025 on), and
    0.32 never prints it (the counter is reset before the check; its /metrics counted 75): there the
    field's absence says nothing."""
    if data.engine != "vllm":
        return None
    stats = data.frame("throughput")
    if stats.height == 0:
        if data.ready_seq() is None:
            return None  # never served: nothing to preempt
        return (
            "no vLLM stats lines (stats logging off?), so nothing in the log counts preemptions; "
            "`vllm:num_preemptions_total` on /metrics does"
        )
    if stats["preemptions"].drop_nulls().len() or data.frame("preemption").height:
        return None
    if "swapped" in stats.columns and stats["swapped"].drop_nulls().len():
        return None  # V0: its preemption lines would be here
    return (
        "this vLLM's stats line has no `Preemptions:` field (V1 prints it only when the window had some, and "
        "some versions, 0.32 among them, never print it), and V1 logs no preemption line: the log cannot tell "
        "none from some. `vllm:num_preemptions_total` on /metrics counts them."
    )


def aborted_once(events: list[Event]) -> list[Event]:
    """The ``request`` events of phase aborted, one per aborted request: vLLM V1 prints ``Aborted
    request(s) ID-x.`` (the engine's id) and ``Request ID aborted.`` (the API's id, a prefix of it)
    for one abort; a ``Request ID aborted.`` whose id begins no ``Aborted request`` id counts alone.
    A line naming several ids (``Aborted request(s) A,B.``) counts each (``repeated`` copies too)."""
    listed = [e for e in events if getattr(e, "phase", None) == "aborted" and "Aborted request" in e.raw]
    ids = [i for e in listed for i in (getattr(e, "request_id", None) or "").split(",") if i]
    out = list(listed)
    for e in events:
        if getattr(e, "phase", None) != "aborted" or e in listed:
            continue
        rid = getattr(e, "request_id", None)
        if rid and any(i.startswith(rid) for i in ids):
            continue
        out.append(e)
    return out


def request_failures(data: RunData) -> tuple[int | None, dict[str, int], int | None, int | None]:
    """(HTTP 4xx/5xx count, per status, aborted requests, failed requests); a count is None when the
    log has no line of its kind at all (access log or request logging off: unknown, not zero)."""
    access = [e for _i, e in data_of(data, "http_access")]
    reqs = [e for _i, e in data_of(data, "request")]
    by_status: Counter[str] = Counter()
    for e in access:
        status = int(getattr(e, "status", 0))
        if status >= 400:
            by_status[str(status)] += e.repeated
    aborts = None
    errors = None
    if reqs:
        aborted = aborted_once(reqs)
        aborts = sum(
            max(1, len((getattr(e, "request_id", None) or "").split(","))) * e.repeated for e in aborted
        )
        errors = sum(e.repeated for e in reqs if getattr(e, "phase", None) == "error")
    return (sum(by_status.values()) if access else None), dict(sorted(by_status.items())), aborts, errors


def data_of(data: RunData, kind: str) -> list[tuple[int, Event]]:
    """(run-order index, event) of one kind (from the run's kind index: no pass over every event)."""
    events = data.events
    return [(i, events[i]) for i in data.kind_index.get(kind, ())]
