"""Served without statistics: a server lifetime that answered requests but printed no stats line.

Users bring "only access logs, no performance statistics" to the trackers: the periodic stats line
(vLLM ``Engine 000: Avg prompt throughput ...``, SGLang ``Decode batch`` / ``Prefill batch``) is
missing, so the decode and prefill sections have nothing to measure. Saying only "no decode-rate
lines" hides the cause, which the log usually names:

- vLLM ``--disable-log-stats`` (``'disable_log_stats': True`` in the ``non-default args`` line);
- vLLM ``--api-server-count`` above 1, which turns the stats logger off (its warning ``AsyncLLM
  created with api_server_count more than 1; disabling stats logging``);
- a log level above INFO (``log_level`` in the args, SGLang ``--log-level warning``);
- otherwise a logging configuration that drops the stats logger's INFO records (vLLM
  ``VLLM_LOGGING_CONFIG_PATH``, which the log cannot show), or, for vLLM since Nov 2024, an engine
  that was idle in every stats interval (idle intervals are logged at DEBUG).

A lifetime is the span from one ``Application startup complete`` (``server_ready``) to the next
(the whole log when none). It was *served* when it holds traffic: uvicorn access lines of inference
requests (``"POST /v1/completions HTTP/1.1" 200``; health, metrics and tokenize calls are not
traffic) or request lines (vLLM ``Received request`` / ``Added request``). The check runs only when
the log has no stats line at all in that lifetime, so on an ordinary log it costs one look at the
frames.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from logscope.analyses.base import RunData
from logscope.events import Event

# uvicorn's access line (plain, vLLM's text format, or a JSON record's message): method, path, status
ACCESS = re.compile(r'"(GET|POST|PUT|DELETE|PATCH) (/\S*) HTTP/[\d.]+" (\d{3})')
# endpoints that are not inference work (probes, metadata, tokenizer calls)
_NOT_WORK = re.compile(
    r"^/(?:health|metrics|ping|v1/models|models|version|tokenize|detokenize|get_model_info"
    r"|model_info|server_info|get_server_info|favicon\.ico|load|$)"
)
NOT_WORK = _NOT_WORK  # shared with analyses.requests (inference access lines)
REQUEST = re.compile(r"\b(?:Received request|Added request) \S")
API_SERVERS_OFF = re.compile(r"api_server_count more than 1; disabling stats logging")
# what the sparse reader must keep for this check (access and request lines, the api-server warning)
ANCHORS = ("HTTP/", "Received request", "Added request", "disabling stats logging")

# stats kinds: vLLM's periodic line, SGLang's batch lines
STATS_KINDS = ("throughput", "decode_batch", "prefill_batch")
# literals of stats lines: held by an unparsed line, the stats exist but were not understood (CV01's case)
_STATS_MARKERS = ("Avg prompt throughput", "Avg generation throughput", "Decode batch", "Prefill batch")
# without a cause in the log, the traffic must have lasted this long (two of vLLM's default 10 s stats
# intervals) for a missing stats line to mean anything: a run that died or stopped within one interval
# may simply not have reached its first stats line (the EngineCore-killed capture: 10 requests, then death)
MIN_SERVED_S = 20.0


@dataclass
class MissingStats:
    """One served lifetime without a stats line, with the traffic seen and the likely cause."""

    first_line: int  # the lifetime's ready line (or the log's first line)
    traffic: int  # access lines of inference requests, or request lines when there are none
    traffic_what: str  # "access lines of inference requests" or "request lines"
    first_traffic: Event
    cause: str  # a sentence: the likely cause, from the log
    cause_line: Event | None
    fix: str
    evidence: list[Event] = field(default_factory=list)

    def sentence(self) -> str:
        """The not-applicable reason's addition: what was served, that no stats line exists, why."""
        return (
            f"the server answered {self.traffic} {self.traffic_what} (first at line {self.first_traffic.line}) "
            f"but printed no statistics line: {self.cause}"
        )


def _args(data: RunData, lo: int, hi: int) -> list[tuple[Event, dict[str, object]]]:
    """The config events between ``lo`` and ``hi`` (a lifetime's args come before its ready line)."""
    out: list[tuple[Event, dict[str, object]]] = []
    for i in data.kind_index.get("config", ()):
        e = data.events[i]
        args = getattr(e, "args", None)
        if lo <= i < hi and isinstance(args, dict):
            out.append((e, args))
    return out


def _cause(
    cfgs: list[tuple[Event, dict[str, object]]], text: list[Event], engine: str | None
) -> tuple[str, Event | None, str]:
    for e, args in cfgs:
        if args.get("disable_log_stats") is True:
            return (
                f"the server ran with `--disable-log-stats` (`'disable_log_stats': True`, line {e.line})",
                e,
                "Drop `--disable-log-stats` (the stats line costs one log line per 10 s).",
            )
    for e in text:
        if API_SERVERS_OFF.search(e.raw or ""):
            return (
                f"vLLM turned its stats logger off because more than one API server ran (line {e.line})",
                e,
                "Run with `--api-server-count 1` when you need the stats line, or read the engine's "
                "`/metrics` endpoint, which still counts with several API servers.",
            )
    for e, args in cfgs:
        n = args.get("api_server_count")
        if isinstance(n, int) and n > 1:
            return (
                f"the server ran with `--api-server-count {n}` (line {e.line}), which turns vLLM's stats "
                "logger off",
                e,
                "Run with `--api-server-count 1` when you need the stats line, or read `/metrics`.",
            )
    for e, args in cfgs:
        level = args.get("log_level") or args.get("uvicorn_log_level")
        if isinstance(level, str) and level.lower() in ("warning", "warn", "error", "critical"):
            return (
                f"the log level was `{level}` (line {e.line}), above the INFO level of the stats lines",
                e,
                "Run with `--log-level info`.",
            )
    if engine == "sglang":
        return (
            "the args name no cause; a logging configuration or a log level above INFO drops SGLang's "
            "`Decode batch` lines, or the file holds only the HTTP server's output",
            None,
            "Check the logging configuration and `--log-level`; collect the scheduler's output too.",
        )
    return (
        "the args name no cause (no `disable_log_stats`, one API server); likely a logging configuration "
        "(`VLLM_LOGGING_CONFIG_PATH`) that drops the stats logger's INFO records, or an engine idle in "
        "every stats interval (vLLM logs idle intervals at DEBUG since Nov 2024)",
        None,
        "Check `VLLM_LOGGING_CONFIG_PATH` / `VLLM_LOGGING_LEVEL` and that the `vllm.v1.metrics.loggers` "
        "logger keeps INFO records.",
    )


def missing_stats(data: RunData) -> list[MissingStats]:
    """Served lifetimes without a stats line (empty when every served lifetime printed one)."""
    memo = data.memo.get("missing_stats")
    if memo is not None:
        return list(memo)
    out = _missing(data)
    data.memo["missing_stats"] = out
    return list(out)


def _missing(data: RunData) -> list[MissingStats]:
    idx = data.kind_index
    if any(len(idx.get(k, ())) for k in STATS_KINDS) and not idx.get("server_ready"):
        return []
    stats = sorted(i for k in STATS_KINDS for i in idx.get(k, ()))
    readies = list(idx.get("server_ready", ()))
    bounds = ([0] if not readies else readies) + [len(data.events)]
    text_seqs = sorted(i for k in ("unparsed", "warning", "http_access") for i in idx.get(k, ()))
    out: list[MissingStats] = []
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        if any(lo <= i < hi for i in stats):
            continue
        access: list[int] = []
        requests: list[int] = []
        for i in text_seqs:
            if not lo <= i < hi:
                continue
            e = data.events[i]
            if e.kind == "http_access":  # the parser's access event (its path, whatever the record's format)
                if not _NOT_WORK.match(str(getattr(e, "path", ""))):
                    access.append(i)
                continue
            raw = e.raw or ""
            if "HTTP/" in raw:
                m = ACCESS.search(raw)
                if m and not _NOT_WORK.match(m.group(2)):
                    access.append(i)
                    continue
            if "request" in raw and REQUEST.search(raw):
                requests.append(i)
        if not access and not requests or _stats_not_understood(data, text_seqs, lo, hi):
            continue
        args_from = ([0] + readies)[readies.index(lo)] if lo in readies else 0
        warnings = [
            data.events[i]
            for i in text_seqs
            if args_from <= i < hi and "disabling stats" in (data.events[i].raw or "")
        ]
        what = "access lines of inference requests" if access else "request lines"
        cause, cause_line, fix = _cause(
            _args(data, args_from, lo if lo in readies else hi), warnings, data.engine
        )
        served = access or requests
        if cause_line is None and _served_at_least(data, served[0], served[-1]) < MIN_SERVED_S:
            continue  # no cause in the log and no proof the traffic outlasted a stats interval
        first = data.events[served[0]]
        ev = [x for x in (cause_line, first) if x is not None]
        out.append(
            MissingStats(
                first_line=data.events[lo].line,
                traffic=len(served),
                traffic_what=what,
                first_traffic=first,
                cause=cause,
                cause_line=cause_line,
                fix=fix,
                evidence=ev,
            )
        )
    return out


def _stats_not_understood(data: RunData, seqs: list[int], lo: int, hi: int) -> bool:
    return any(
        lo <= i < hi and any(m in (data.events[i].raw or "") for m in _STATS_MARKERS)
        for i in seqs
        if data.events[i].kind == "unparsed"
    )


def _served_at_least(data: RunData, first: int, last: int) -> float:
    """A lower bound of the seconds between the first and the last traffic line: access lines often
    carry no time, so the first is placed at the next timed line and the last at the previous one."""
    t_last = data.time_at(last)
    t_first = next(
        (data.events[i].t_s for i in range(first, len(data.events)) if data.events[i].t_s is not None), None
    )
    if t_first is None or t_last is None:
        return 0.0
    return t_last - t_first


def missing_stats_reason(data: RunData) -> str:
    """``; the server answered ... but printed no statistics line: CAUSE`` for a not-applicable reason, or ''."""
    return "".join(f"; {m.sentence()}" for m in missing_stats(data))
