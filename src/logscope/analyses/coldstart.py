"""Cold start: the phases from process start to the server accepting requests.

Each phase takes the engine's own printed duration where there is one (vLLM ``Model loading took
... seconds``, ``torch.compile takes X s in total``, ``Graph capturing finished in X secs``, ``init
engine ... took X seconds``; SGLang ``elapsed=``), the longest over the ranks that printed it (the
ranks run in parallel, so the slowest one is on the critical path), with the ranks' range beside
it. Otherwise it is measured between timestamps (SGLang ``Capture cuda graph begin`` -> ``end``).
The total runs from the log's first timestamp to the ready line (``Application startup complete``,
SGLang ``The server is fired up and ready to roll!``); an untimed ready line takes the time of the
last timestamped line before it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.base import NotApplicable, Result, RunData, bursts
from logscope.events import Event


class Phase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    seconds: float | None
    source: str = Field(description='"printed" (the engine\'s own figure) or "timestamps"')
    start_line: int
    end_line: int | None = None
    range_s: tuple[float, float] | None = Field(
        None, description="min and max over the ranks that printed it"
    )
    ranks: int = Field(1, description="lines the figure was taken from (one per rank)")
    memory_gib: float | None = None
    detail: str | None = None


class ColdStart(Result):
    phases: list[Phase]
    total_s: float | None
    total_min: float | None = None
    start_time: str | None = None
    ready_time: str | None = None
    start_line: int | None = None
    ready_line: int | None = None


def _printed(
    name: str, evs: Sequence[Event], attr: str = "seconds", detail: str | None = None
) -> Phase | None:
    vals = [(float(getattr(e, attr)), e) for e in evs if getattr(e, attr, None) is not None]
    if not vals:
        return None
    top, _ev = max(vals, key=lambda v: v[0])
    lo = min(v for v, _e in vals)
    mems = [m for _v, e in vals if (m := getattr(e, "memory_gib", None)) is not None]
    return Phase(
        name=name,
        seconds=round(top, 3),
        source="printed",
        start_line=min(e.line for _v, e in vals),
        end_line=max(e.line for _v, e in vals),
        range_s=(lo, top) if len(vals) > 1 and lo != top else None,
        ranks=len(vals),
        memory_gib=max(mems) if mems else None,
        detail=detail,
    )


def _between(
    name: str, data: RunData, begin: Sequence[int], end: Sequence[int], detail: str | None = None
) -> Phase | None:
    """Timestamps: earliest begin to latest end (seq indexes into the run's events)."""
    if not begin or not end:
        return None
    t0 = data.time_at(min(begin))
    last = max(end)
    t1 = data.time_at(last)
    if t0 is None or t1 is None or t1 < t0:
        return None
    return Phase(
        name=name,
        seconds=round(t1 - t0, 3),
        source="timestamps",
        start_line=data.events[min(begin)].line,
        end_line=data.events[last].line,
        detail=detail,
    )


def _bursts(items: list[tuple[int, Event]]) -> list[list[tuple[int, Event]]]:
    timed = [(i, e) for i, e in items if e.t_s is not None]
    return [[timed[k] for k in g] for g in bursts([e.t_s or 0.0 for _i, e in timed])]


def _captures(data: RunData, items: list[tuple[int, Event]]) -> Phase | None:
    """Graph capture: one burst of lines per kind of capture (target, draft, ...), run one after the
    other; each burst's slowest rank, summed."""
    ends = [(i, e) for i, e in items if not getattr(e, "begin", False)]
    begins = [(i, e) for i, e in items if getattr(e, "begin", False)]
    parts: list[Phase] = []
    for g in _bursts(ends):
        p = _printed("capture", [e for _i, e in g])
        if p is None:
            before = [i for i, _e in begins if i < g[0][0]]
            p = _between("capture", data, before[-len(g) :] if before else [], [i for i, _e in g])
            if p is not None:
                mems = [m for _i, e in g if (m := getattr(e, "memory_gib", None)) is not None]
                p = p.model_copy(update={"memory_gib": max(mems) if mems else None})
        if p is not None:
            parts.append(p)
    if not parts:
        return None
    total = round(sum(p.seconds or 0.0 for p in parts), 3)
    mems = [p.memory_gib for p in parts if p.memory_gib is not None]
    detail = None
    if len(parts) > 1:
        detail = f"{len(parts)} captures one after the other: " + " + ".join(
            f"{p.seconds:g} s (lines {p.start_line}-{p.end_line})" for p in parts
        )
    return Phase(
        name="CUDA graph capture",
        seconds=total,
        source=parts[0].source,
        start_line=parts[0].start_line,
        end_line=parts[-1].end_line,
        range_s=parts[0].range_s if len(parts) == 1 else None,
        ranks=max(p.ranks for p in parts),
        memory_gib=round(sum(mems), 2) if mems else None,
        detail=detail,
    )


def cold_start(data: RunData) -> ColdStart | NotApplicable:
    """Start-up phases and total (see the module docstring)."""
    ev = data.events
    ready_seq = data.ready_seq()
    stop = ready_seq if ready_seq is not None else len(ev)

    def of(kind: str) -> list[tuple[int, Event]]:
        """The start-up's events of ``kind`` (from the run's kind index: no pass over every event)."""
        return [(i, ev[i]) for i in data.kind_index.get(kind, ()) if i < stop]

    phases: list[Phase] = []
    loads = _bursts(of("model_load"))
    weights_end: int | None = None
    for n, g in enumerate(loads):
        name = "weights" if n == 0 else ("draft weights" if n == 1 else f"weights ({n + 1})")
        p = _printed(name, [e for _i, e in g])
        if p is None:
            begins = [i for i, e in enumerate(ev[: min(stop, g[0][0])]) if "Load weight begin" in e.raw]
            p = _between(name, data, begins[-len(g) :], [i for i, _e in g])
        if p:
            phases.append(p)
        if n == 0:
            weights_end = g[-1][0]
    compiles = of("compile")
    for stage, name in (
        ("dynamo", "dynamo bytecode transform"),
        ("graph", "graph compile"),
        ("total", "torch.compile"),
        ("total_with_warmup", "torch.compile + warmup"),
        ("warmup", "profiling/warmup run"),
        ("cache_load", "compiled graph cache load"),
    ):
        p = _printed(name, [e for _i, e in compiles if getattr(e, "stage", None) == stage])
        if p:
            phases.append(p)
    jit = [(i, e) for i, e in compiles if getattr(e, "stage", None) == "jit_warmup"]
    if jit:  # kernels compiled during start-up, each announced on its own line (SGLang DeepGEMM)
        p = _between(
            "kernel JIT warmup",
            data,
            [jit[0][0]],
            [jit[-1][0]],
            detail=f"{len(jit)} kernel(s); the time runs from the first announcement to the last",
        )
        if p:
            phases.append(p)
    p = _printed("memory profiling", [e for _i, e in of("memory_profile")])
    if p:
        phases.append(p)
    pools = of("kv_cache_pool")
    if pools and weights_end is not None:
        p = _between(
            "KV cache sizing (weights loaded -> first KV pool line)", data, [weights_end], [pools[0][0]]
        )
        if p:
            phases.append(p)
    p = _captures(data, of("graph_capture"))
    if p:
        phases.append(p)
    inits = of("engine_init")
    limits = of("scheduler_limits")
    if data.engine == "sglang":
        p = _printed("scheduler start-up (printed scheduler_e2e, weights included)", [e for _i, e in inits])
        if p:
            phases.append(p)
        if weights_end is not None and limits:
            p = _between(
                "engine init after weights (weights loaded -> scheduler summary)",
                data,
                [weights_end],
                [limits[-1][0]],
            )
            if p:
                phases.append(p)
    else:
        p = _printed("engine init", [e for _i, e in inits])
        if p:
            phases.append(p)
    marks = inits or limits
    last_startup = marks[-1][0] if marks else None
    first = next(((i, e) for i, e in enumerate(ev) if e.t_s is not None), None)
    if ready_seq is not None and first is not None:
        if last_startup is not None:
            p = _between(
                _last_span_name(data, last_startup, ready_seq, bool(inits)), data, [last_startup], [ready_seq]
            )
            if p:
                phases.append(p)
    phases.sort(key=lambda p: p.start_line)
    if first is None:
        return NotApplicable(reason="no timestamped lines")
    if ready_seq is None and not phases:
        return NotApplicable(
            reason="the log has no start-up figures and no ready line (it starts after start-up, "
            "or start-up failed before any phase finished)"
        )
    total = None
    ready_t = data.time_at(ready_seq) if ready_seq is not None else None
    if ready_t is not None and first[1].t_s is not None:
        total = round(ready_t - first[1].t_s, 3)
    method = (
        "Phases from the engine's printed durations (the slowest rank where several ranks print one; "
        "`range_s` gives the spread) and from timestamps otherwise (`source`); phases can nest (vLLM's engine "
        "init includes compile, profiling and graph capture)."
    )
    ready_ev = ev[ready_seq] if ready_seq is not None else None
    if ready_ev is not None and total is not None:
        untimed = " (untimed; the last timestamp before it)" if ready_ev.t_s is None else ""
        method += (
            f" Total: first timestamp (line {first[1].line}) to the ready line {ready_ev.line}{untimed}."
        )
    elif ready_seq is None:
        method += " No ready line: the server never reported ready in this log, so there is no total."
    ready_time = None
    if ready_seq is not None:
        ready_time = next((e.time for e in reversed(ev[: ready_seq + 1]) if e.time), None)
    return ColdStart(
        method=method,
        phases=phases,
        total_s=total,
        total_min=round(total / 60, 2) if total is not None else None,
        start_time=first[1].time,
        ready_time=ready_time,
        start_line=first[1].line,
        ready_line=ready_ev.line if ready_ev is not None else None,
    )


_HELD = (
    ("graph_capture", "CUDA graph capture"),
    ("compile", "compile"),
    ("model_load", "weight loading"),
    ("kv_cache_pool", "KV cache allocation"),
    ("memory_profile", "memory profiling"),
)


def _last_span_name(data: RunData, start: int, ready: int, init_line: bool) -> str:
    """The name of the span from the last start-up line to ready, by what it holds.

    Usually nothing but the API server coming up ("API server up -> ready"). When start-up work is
    logged inside it (SGLang versions that print the scheduler's line before the CUDA graph capture),
    the span is named for that work, so that a 330 s capture does not read as the API server's time."""
    kinds = {e.kind for e in data.events[start + 1 : ready]}
    held = [label for kind, label in _HELD if kind in kinds]
    if not held:
        return "API server up -> ready"
    mark = "engine init line" if init_line else "scheduler summary line"
    return f"{mark} -> ready (holds {', '.join(held)})"
