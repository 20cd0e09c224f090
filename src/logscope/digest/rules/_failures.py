"""What the engine-death and start-failure rules share: the lines that say a process died, and the
exception behind them."""

from __future__ import annotations

import re

from logscope.digest.context import Context, Hit
from logscope.events import Error, Event

DEATH = re.compile(
    r"EngineCore failed to start|Engine core initialization failed|WorkerProc failed to start|"
    r"WorkerProc initialization failed|Timed out waiting for engine core processes to start|"
    r"(?:EngineCore|Scheduler|TokenizerManager|DetokenizerManager|DataParallelController|TpModelWorkerClient|"
    r"MultiTokenizerRouter|WorkerProc) hit an exception|EngineCore encountered a fatal error|"
    r"died unexpectedly|died with exit code|EngineDeadError|Received sigquit from a child proces|"
    r"[Ww]atchdog timeout \(self\.watchdog_timeout|Failed to load model - not enough GPU memory|"
    r"watchdog thread terminated with exception|Watchdog caught collective operation timeout|"
    r"Initialization failed\. warmup error"
)
ANCHORS = (
    "failed",
    "hit an exception",
    "fatal error",
    "died",
    "EngineDeadError",
    "sigquit",
    "atchdog timeout",
    "Timed out waiting",
    "watchdog thread terminated",
    "collective operation timeout",
)
# exceptions that only relay another one: the root cause is elsewhere
RELAYS = ("EngineDeadError", "SystemExit", "KeyboardInterrupt")


def death_hits(ctx: Context) -> list[Hit]:
    return ctx.grep(DEATH, ANCHORS, kinds=("error", "warning", "unparsed", "oom"))


def root_cause(ctx: Context, near: Event, marker: str | None = None) -> tuple[Event, str] | None:
    """(event, ``Exception: message``) of the exception behind a death line: the line's own traceback,
    else the closest error with an exception before it, else after it, else what the death line
    itself says after its ``marker`` (``... terminated with exception: CUDA error: ...``)."""
    seq = ctx.index_of(near)
    errors = [
        (i, e)
        for i, e in ctx.of_kind("error")
        if isinstance(e, Error) and e.exception and not e.exception.endswith(RELAYS)
    ]
    own = [x for x in errors if x[1] is near]
    before = [x for x in errors if seq is not None and x[0] < seq]
    after = [x for x in errors if seq is not None and x[0] > seq]
    pick = own or before[-1:] or after[:1]
    if not pick:
        first = near.raw.split("\n", 1)[0]
        rest = first.split(marker, 1)[1] if marker and marker in first else ""
        if not rest.startswith(":"):
            return None
        rest = rest[1:].strip()
        return (near, rest[:300]) if rest and not rest.startswith("Traceback") else None
    e = pick[0][1]
    assert isinstance(e, Error)
    exc = str(e.exception)
    tb = e.traceback
    line = next(
        (t.strip() for t in reversed(tb) if t.strip().startswith(exc.split(".")[-1]) or exc in t), None
    )
    if line is None:
        line = f"{exc}: {e.message}"
    if exc not in line:
        line = f"{exc}: {line}"
    return e, line.strip()[:300]


STARTUP_KINDS = (
    "config",
    "version",
    "model_load",
    "kv_cache_pool",
    "memory_profile",
    "graph_capture",
    "compile",
    "server_start",
    "kv_capacity",
    "scheduler_limits",
)
_ENTRY = re.compile(r"launch_server|run_server|api_server|entrypoints|engine_core|run_engine_core|cli/serve")


def shows_startup(ctx: Context) -> bool:
    """Does the log show a server starting (configuration, weights, KV sizing, compiles, ...)?"""
    return any(ctx.has(k) for k in STARTUP_KINDS)


def uncaught_at_start(ctx: Context) -> Event | None:
    """The log's last error, when it is an uncaught traceback (no level: printed by the interpreter) from a
    server's start-up code, in a log that never shows the server serving."""
    errors = ctx.of_kind("error")
    if not errors or ctx.ready_seq is not None or ctx.first_busy_seq is not None:
        return None
    _i, e = errors[-1]
    tb = getattr(e, "traceback", None) or []
    if e.level is None and getattr(e, "exception", None) and tb:
        if shows_startup(ctx) or any(_ENTRY.search(t) for t in tb):
            return e
    return None
