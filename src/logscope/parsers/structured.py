"""Structured input: JSON records become the engine's own text lines, before anything else reads them.

Why here, in framing: a production log often reaches us as JSON, either the engine's own JSON logging
(python-json-logger through a ``dictConfig``, vLLM 0.32's ``--logging-config.formatter json``) or a
collector's wrapper around each text line (docker ``json-file``, Loki ``logcli --output jsonl``,
Google Cloud Logging, the OpenTelemetry collector's OTLP JSON file exporter, CloudWatch, Elasticsearch
hits). Each record is decoded (orjson) and turned into the text line the engine's text formatter would
have printed for it: where the JSON carries that line (``log``, ``line``, ``textPayload``, ``body``,
``message``...) the line itself, else a line built from the header keys (level, time, file and line,
process). A collector's stamp travels with the line (``Line.stamp``, RFC 3339) and becomes the record's
outer time, as a ``docker logs -t`` stamp does (it holds the year and zone vLLM's ``MM-DD HH:MM:SS``
lacks). Everything after framing then reads the same records as from a text log: engine detection,
headers, record joining, grammars, the sparse reader's anchors. (The event's ``raw`` is that text line;
its ``file`` and ``line`` point at the JSON record.)

Key names are data (``FIELDS``, ``BATCHES``, ``WRAPPERS``), not code per shape: a vendor's formatter
with other names is one more name in a tuple. A JSON record whose keys hold no message is searched for a
string that holds an engine line; failing that it stays the line it was (an ``unparsed`` event) and the
file's coverage notes name its keys. Bad JSON (a truncated object, a value that is no object, invalid
UTF-8, a document that breaks off) is noted and the rest of the file read.

Speed: a block of text is looked at only when it holds ``{"`` (one C-level scan); the sparse reader
finds anchors in the raw bytes as on a text log (an anchor survives JSON escaping unless it holds a
quote, a backslash or a control character; docker's Go encoder also escapes ``<``, ``>``, ``&``), so on
a big log only candidate lines are decoded.
"""

from __future__ import annotations

import calendar
import json
import re
import time as _time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

# Where each part of a record may be found, most specific first. A record is a JSON object after
# unwrapping (``WRAPPERS``) and flattening OTLP attributes. Values are taken when they are strings
# (numbers too for times, process ids and line numbers).
FIELDS: dict[str, tuple[str, ...]] = {
    # the engine's text: a whole line (docker, Loki, Cloud Logging, OTLP filelog, CloudWatch, ES) or
    # only the message (python-json-logger, vLLM's JSON formatter, OTel SDK)
    "text": (
        "log",
        "line",
        "textPayload",
        "body",
        "message",
        "msg",
        "MESSAGE",
        "event",
    ),  # (structlog: "event")
    "level": ("levelname", "level", "severityText", "severity", "log.level", "levelName", "lvl"),
    "asctime": ("asctime",),  # the engine's own time (python ``asctime``, any ``datefmt`` with a date)
    # a collector's or a record's stamp: RFC 3339 text, or epoch ms / ns numbers
    "stamp": (
        "time",
        "@timestamp",
        "timestamp",
        "timeUnixNano",
        "observedTimeUnixNano",
        "ts",
        "receiveTimestamp",
    ),
    "file": ("filename", "fileinfo", "code.filepath", "code.file.path", "pathname"),
    "lineno": ("lineno", "code.lineno", "code.line.number"),
    "logger": ("name", "logger", "logger_name", "loggerName"),
    "procname": ("vllm_process_name",),
    "pid": ("process", "pid", "process.pid"),
    # multi-line content that belongs to the record: a traceback
    "exc": ("exc_info", "exc_text", "stack_info", "exception.stacktrace", "stack_trace"),
    "request_id": ("request_id", "requestId", "rid", "vllm.request_id"),
}

# text keys that hold a collector's copy of a printed line: taken as printed, never given a header
COPIES = ("log", "line", "textPayload")

# keys whose object value is the record (Elasticsearch hit, Cloud Logging structured payload); the
# outer object's own keys (its ``timestamp``, ``severity``) stay as fallbacks
WRAPPERS = ("_source", "jsonPayload", "fields")

# key paths to lists of records inside one JSON value (an export document or batch)
BATCHES: tuple[tuple[str, ...], ...] = (
    ("resourceLogs", "scopeLogs", "logRecords"),  # OTLP JSON (file exporter): one request per line
    ("events",),  # aws logs filter-log-events
    ("hits", "hits"),  # an Elasticsearch / OpenSearch search response
    ("entries",),  # Cloud Logging API entries.list
)

_NESTED = frozenset(p[0] for p in BATCHES) | frozenset(WRAPPERS)

# which tool wrote a record, by a key only that tool writes (for the coverage notes)
SHAPES: tuple[tuple[str, str], ...] = (
    ("resourceLogs", "OTLP JSON"),
    ("textPayload", "Google Cloud Logging"),
    ("jsonPayload", "Google Cloud Logging"),
    ("logStreamName", "CloudWatch"),
    ("ingestionTime", "CloudWatch"),
    ("_source", "Elasticsearch/OpenSearch"),
    ("@timestamp", "Elasticsearch/OpenSearch"),
    ("stream", "docker json-file"),
    ("log", "docker json-file"),
    ("labels", "Loki"),
    ("line", "Loki"),
    ("vllm_process_name", "vLLM JSON formatter"),
    ("levelname", "python-json-logger"),
    ("asctime", "python-json-logger"),
    ("message", "JSON with a message"),
)

LEVELS = {
    "debug": "DEBUG",
    "info": "INFO",
    "notice": "INFO",
    "warning": "WARNING",
    "warn": "WARNING",
    "error": "ERROR",
    "err": "ERROR",
    "critical": "CRITICAL",
    "fatal": "CRITICAL",
    "alert": "CRITICAL",
    "emergency": "CRITICAL",
    "trace": "DEBUG",
    "information": "INFO",
    "informational": "INFO",
}

# an engine's own line (vLLM header, maybe behind its process tag; SGLang's bracketed stamp; uvicorn)
ENGINE_LINE = re.compile(
    r"(?:\([^()\n]{1,80}pid=\d+[^()\n]*\) )?(?:\[[^\]\n]{1,40}\] )?"
    r"(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d"
    r"|\[?\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):\s)"
)
_ASCTIME = re.compile(r"(?:(?P<y>\d{4})-)?(?P<mo>\d\d)-(?P<d>\d\d)[ T](?P<t>\d\d:\d\d:\d\d)")
_RFC3339 = re.compile(
    r"(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[T ](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:[.,](?P<f>\d+))?"
    r"(?P<z>Z|[+-]\d\d:?\d\d)?$"
)
# a process tag printed in front of a JSON object (worker stdout decoration, vLLM issue #57955)
_PREFIX = re.compile(r"\(?[A-Za-z_][^()\n]{0,80}pid=\d+[^()\n]*\) (?=\{)")

MAX_DOCUMENT = 512 << 20  # bytes of a pretty-printed JSON document read at once (a larger one: line by line)
MAX_REVERSE = 2_000_000  # lines of a newest-first file kept to put them in time order
_MAX_NOTED_SHAPES = 3


@dataclass
class Front:
    """What the JSON front end saw in one file: record counts by shape, problems, a docker split line."""

    path: str
    shapes: dict[str, int] = field(default_factory=dict)
    problems: dict[str, list[int]] = field(default_factory=dict)  # reason -> [count, first line]
    unknown: dict[tuple[str, ...], list[int]] = field(default_factory=dict)  # keys -> [count, first line]
    partial: str = ""  # docker json-file: a long line split into records without their "\n"
    notes: list[str] = field(default_factory=list)

    def record(self, rec: dict[str, Any], outer: dict[str, Any] | None, number: int) -> Text | None:
        """The record's text, counted by its shape; None for a record of no known shape (counted by its
        keys, with the line of the first, for the coverage note)."""
        t = text_of(rec, outer)
        if t is None:
            self.unknown.setdefault(tuple(sorted(rec)), [0, number])[0] += 1
            return None
        shape = shape_of(rec, outer)
        self.shapes[shape] = self.shapes.get(shape, 0) + 1
        return t

    def problem(self, reason: str, number: int) -> None:
        seen = self.problems.get(reason)
        if seen is None:
            self.problems[reason] = [1, number]
        else:
            seen[0] += 1

    def finish(self) -> list[str]:
        """The coverage notes on this file's JSON records."""
        out = list(self.notes)
        if self.shapes:
            total = sum(self.shapes.values())
            kinds = ", ".join(f"{name} {n}" for name, n in sorted(self.shapes.items(), key=lambda kv: -kv[1]))
            out.append(f"{self.path}: {total} JSON records read as the engine's text lines ({kinds})")
        for reason, (n, first) in self.problems.items():
            out.append(
                f"{self.path}: {n} line(s) of {reason} (first at line {first}); kept as text, rest of the file read"
            )
        for i, (keys, (n, first)) in enumerate(sorted(self.unknown.items(), key=lambda kv: -kv[1][0])):
            if i >= _MAX_NOTED_SHAPES:
                out.append(f"{self.path}: {len(self.unknown) - i} more unknown JSON shapes")
                break
            out.append(
                f"{self.path}: {n} JSON record(s) of an unknown shape (keys: {', '.join(keys[:12])}; first at "
                f"line {first}) hold no engine line: kept as unparsed lines"
            )
        return out


# -- values -------------------------------------------------------------------------------------


def _get(rec: dict[str, Any], names: tuple[str, ...]) -> Any:
    for name in names:
        v = rec.get(name)
        if v is not None and v != "":
            return v
    return None


def _text(v: Any) -> str | None:
    """A string value; OTLP's ``{"stringValue": ...}`` unwrapped; a list of strings joined by lines."""
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        s = v.get("stringValue")
        return s if isinstance(s, str) else None
    if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
        return "".join(x if x.endswith("\n") else x + "\n" for x in v).rstrip("\n")
    return None


def _otlp_value(v: Any) -> Any:
    if isinstance(v, dict):
        for key in ("stringValue", "intValue", "doubleValue", "boolValue"):
            if key in v:
                return v[key]
    return None


def stamp_text(v: Any) -> str | None:
    """A collector's stamp as RFC 3339 text: strings as written, epoch numbers (ms, or ns as OTLP
    writes them, also as digit strings) in UTC."""
    if isinstance(v, str):
        # (RFC 3339 in UTC, as docker, Loki and Cloud Logging write it: told by its shape, without the regex)
        if (
            v[-1:] == "Z"
            and v[4:5] == "-"
            and v[10:11] == "T"
            and v[:4].isdigit()
            and v[11:19].replace(":", "").isdigit()
        ):
            return v
        if _RFC3339.match(v):
            return v
        if not v.isdigit():
            return None
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0:
        return None
    if v >= 1e17:  # nanoseconds
        sec, frac = divmod(int(v), 1_000_000_000)
        digits = f"{frac:09d}"
    elif v >= 1e14:  # microseconds
        sec, frac = divmod(int(v), 1_000_000)
        digits = f"{frac:06d}"
    elif v >= 1e11:  # milliseconds
        sec, frac = divmod(int(v), 1000)
        digits = f"{frac:03d}"
    else:  # seconds
        sec = int(v)
        digits = f"{round((v - sec) * 1e6):06d}" if isinstance(v, float) else ""
    try:
        t = _time.gmtime(sec)
    except (OverflowError, ValueError, OSError):
        return None
    return _time.strftime("%Y-%m-%dT%H:%M:%S", t) + (f".{digits}" if digits else "") + "Z"


def epoch(stamp: str) -> float | None:
    """Seconds since 1970 of an RFC 3339 stamp (no zone: taken as UTC), for ordering records."""
    m = _RFC3339.match(stamp)
    if m is None:
        return None
    t = calendar.timegm(
        (int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]), 0, 0, 0)
    )
    frac = float("0." + m["f"]) if m["f"] else 0.0
    z = m["z"]
    if z and z != "Z":
        sign = 1 if z[0] == "+" else -1
        zz = z[1:].replace(":", "")
        t -= sign * (int(zz[:2]) * 3600 + int(zz[2:]) * 60)
    return t + frac


# -- records ------------------------------------------------------------------------------------


def records_of(value: Any) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None]]:
    """(record, its wrapper or None) of each log record in one decoded JSON value."""
    if isinstance(value, list):
        for item in value:
            yield from records_of(item)
        return
    if not isinstance(value, dict):
        return
    if _NESTED.isdisjoint(value):  # a record as it is (nearly every line: one dict lookup per key set)
        yield value, None
        return
    for path in BATCHES:
        inner = _batch(value, path)
        if inner is not None:
            for item in inner:
                yield from records_of(item)
            return
    for key in WRAPPERS:
        inner = value.get(key)
        if isinstance(inner, dict):
            yield inner, value
            return
    yield value, None


def _batch(value: dict[str, Any], path: tuple[str, ...]) -> list[Any] | None:
    """The records at ``path`` (lists along the way are walked: OTLP nests three)."""
    level: list[Any] = [value]
    for i, key in enumerate(path):
        nxt: list[Any] = []
        for v in level:
            if not isinstance(v, dict):
                continue
            got = v.get(key)
            if i + 1 < len(path) and isinstance(got, dict):
                nxt.append(got)
            elif isinstance(got, list):
                nxt.extend(got) if i + 1 < len(path) else nxt.append(got)
        if not nxt:
            return None
        level = nxt
    out: list[Any] = []
    for v in level:
        if isinstance(v, list):
            out.extend(v)
    return out if level else None


def _flat(rec: dict[str, Any]) -> dict[str, Any]:
    """OTLP's ``attributes`` (a list of key/value objects) as plain keys beside the record's own."""
    attrs = rec.get("attributes")
    if isinstance(attrs, list):
        rec = dict(rec)
        for a in attrs:
            if isinstance(a, dict) and isinstance(a.get("key"), str):
                rec.setdefault(a["key"], _otlp_value(a.get("value")))
    return rec


_SHAPE_NAMES: dict[tuple[tuple[str, ...], tuple[str, ...]], str] = {}


def shape_of(rec: dict[str, Any], outer: dict[str, Any] | None) -> str:
    """Which tool wrote the record (for the notes), by a key only it writes (kept per layout of keys)."""
    key = (tuple(rec), tuple(outer) if outer is not None else ())
    name = _SHAPE_NAMES.get(key)
    if name is None:
        if len(_SHAPE_NAMES) > 1024:
            _SHAPE_NAMES.clear()
        name = _SHAPE_NAMES[key] = _shape_of(rec, outer)
    return name


def _shape_of(rec: dict[str, Any], outer: dict[str, Any] | None) -> str:
    if "timeUnixNano" in rec or "observedTimeUnixNano" in rec:
        return "OTLP JSON"
    for scope in (outer, rec):
        if scope is None:
            continue
        for key, name in SHAPES:
            if key in scope:
                return name
    return "JSON"


@dataclass(slots=True)
class Text:
    """The text line standing for one JSON record, and whether it ended in ``\\r\\n``."""

    text: str
    cont: bool = False
    partial: bool = False  # docker json-file: no "\n" at the end, the line goes on in the next record
    stamp: str | None = None  # the collector's stamp (RFC 3339): the record's outer time
    request_id: str | None = None  # the record's request id key (``FIELDS["request_id"]``), as written


@dataclass(frozen=True, slots=True)
class _Plan:
    """Which of ``FIELDS``' keys one layout of keys holds, in order: looked up once per layout (a
    log's records share a few), not once per record."""

    text: tuple[str, ...]
    stamp: tuple[str, ...]
    exc: tuple[str, ...]
    docker: bool  # "log" and "stream": docker json-file, whose long lines come in parts
    rid: tuple[str, ...]  # request id keys


_PLANS: dict[tuple[str, ...], _Plan] = {}


def _plan(rec: dict[str, Any]) -> _Plan:
    keys = tuple(rec)
    plan = _PLANS.get(keys)
    if plan is None:
        if len(_PLANS) > 1024:
            _PLANS.clear()
        have = set(keys)
        plan = _PLANS[keys] = _Plan(
            tuple(k for k in FIELDS["text"] if k in have),
            tuple(k for k in FIELDS["stamp"] if k in have),
            tuple(k for k in FIELDS["exc"] if k in have),
            "log" in have and "stream" in have,
            tuple(k for k in FIELDS["request_id"] if k in have),
        )
    return plan


def text_of(rec: dict[str, Any], outer: dict[str, Any] | None) -> Text | None:
    """The engine's text line for one record, with the collector's stamp in front; None when the
    record holds no string that is an engine line or a message."""
    rec = _flat(rec)
    plan = _plan(rec)
    text = None
    name = ""
    for name in plan.text:  # the first key that holds text (ECS's "log" is an object, not the line)
        text = _text(rec[name])
        if text is not None:
            break
    stamp_v = None
    for key in plan.stamp:
        stamp_v = rec[key]
        if stamp_v is not None and stamp_v != "":
            break
    if stamp_v is None and outer is not None:
        stamp_v = _get(outer, FIELDS["stamp"])
    stamp = stamp_text(stamp_v) if stamp_v is not None else None
    cont = partial = False
    if text is None:
        name = ""
        text = _search(rec)
        if text is None:
            return None
    else:
        # a collector's copy of a line: docker keeps the line's "\n" (and a split line's parts lack it)
        if text.endswith("\n"):
            text = text[:-1]
        elif plan.docker:
            partial = True
        if text.endswith("\r"):  # vLLM ends each line but the last of a multi-line message with \r\n
            text, cont = text[:-1], True
    if plan.exc:
        exc = _text(_get(rec, plan.exc))
        if exc:
            text = text.rstrip("\n") + "\n" + exc.strip("\n")
    if name not in COPIES and not ENGINE_LINE.match(text):
        text = _with_header(rec, outer, text)
    rid = _get(rec, plan.rid) if plan.rid else None
    if rid is None and outer is not None:
        rid = _get(outer, FIELDS["request_id"])
    return Text(text, cont, partial, stamp, _request_id(rid))


def _request_id(v: Any) -> str | None:
    """A request id key's value as text (a string, or a number some formatters write); else None."""
    if isinstance(v, str):
        return v[:200] or None
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    return None


_REDRAW = re.compile(r"\r(?!\n)")


def redraws(t: Text) -> list[Text]:
    """``t`` cut at each lone ``\r`` (a progress bar redrawn), as framing cuts a text line there; the
    ``\n`` of a multi-line message stays inside one line (its record's text, as the text path joins it)."""
    if "\r" not in t.text:
        return [t]
    pieces = _REDRAW.split(t.text)
    out = [Text(p) for p in pieces]
    out[0].stamp, out[0].request_id = t.stamp, t.request_id
    out[-1].cont = t.cont
    return out


def _search(rec: dict[str, Any], depth: int = 0) -> str | None:
    """A string anywhere in ``rec`` (three levels down) that holds an engine line."""
    for v in rec.values():
        if isinstance(v, str):
            if ENGINE_LINE.match(v):
                return v.rstrip("\n")
        elif isinstance(v, dict) and depth < 3:
            found = _search(v, depth + 1)
            if found is not None:
                return found
    return None


def _with_header(rec: dict[str, Any], outer: dict[str, Any] | None, message: str) -> str:
    """``message`` behind the header the engine's text formatter would have printed, built from the
    record's keys: vLLM's ``LEVEL MM-DD HH:MM:SS [file:line] `` (behind ``(Name pid=N) `` when the
    record names its vLLM process), SGLang's ``[YYYY-MM-DD HH:MM:SS] `` for its loggers. Without a
    level or a time of its own the message stays bare (its stamp, if any, still goes in front)."""
    level_v = _get(rec, FIELDS["level"])
    if level_v is None and outer is not None:
        level_v = _get(outer, FIELDS["level"])
    level = LEVELS.get(level_v.lower()) if isinstance(level_v, str) else None
    asctime = _get(rec, FIELDS["asctime"])
    m = _ASCTIME.match(asctime) if isinstance(asctime, str) else None
    logger = _get(rec, FIELDS["logger"])
    logger = logger if isinstance(logger, str) else None
    if m is None and level is not None:  # an OTel SDK record: its own stamp is its time (UTC)
        st = rec.get("timeUnixNano")
        st_text = stamp_text(st) if st is not None else None
        m = _ASCTIME.match(st_text) if st_text is not None else None
    if m is None:
        return message
    if logger is not None and logger.startswith("sglang") and m["y"]:
        return f"[{m['y']}-{m['mo']}-{m['d']} {m['t']}] {message}"
    if level is None:
        return message
    file = _get(rec, FIELDS["file"])
    lineno = _get(rec, FIELDS["lineno"])
    if isinstance(file, str) and "/" in file:
        file = file.rsplit("/", 1)[1]
    if isinstance(file, str) and isinstance(lineno, int | str) and str(lineno).isdigit():
        src = f"{file}:{lineno}"
    else:  # no line number: the file, else the logger's name (never an invented number)
        src = file if isinstance(file, str) else (logger or "?")
    head = f"{level} {m['mo']}-{m['d']} {m['t']} [{src}] "
    proc = _get(rec, FIELDS["procname"])
    pid = _get(rec, FIELDS["pid"])
    if isinstance(proc, str) and isinstance(pid, int | str):
        head = f"({proc} pid={pid}) " + head
    return head + message


# -- lines ----------------------------------------------------------------------------------------


def looks_json(body: str) -> int:
    """Where a JSON value starts in a physical line (0, or after a process tag), or -1."""
    c = body[:1]
    if c == "{":
        return 0 if body[1:2] in ('"', " ", "}", "\t", "") else -1
    if c == "[":
        return 0 if body[1:2] in ("{", "", "]", " ", "\t", "[", '"') else -1
    if c in " \t":
        s = body.lstrip()
        return looks_json(s) + len(body) - len(s) if s[:1] in ("{", "[") else -1
    if '{"' in body[:120]:
        m = _PREFIX.match(body)
        if m is not None:
            return m.end()
    return -1


def convert(front: Front, body: str, number: int) -> list[Text] | None:
    """Text lines for the JSON value in the physical line ``body`` (several for a batch), or None:
    not JSON, or JSON we keep as it is (noted)."""
    start = looks_json(body)
    if start < 0:
        return None
    doc = body[start:] if start else body
    if _CONTROL.search(doc):  # JSON holds no raw control character: binary data, left to framing's count
        return None
    try:
        value = orjson.loads(doc)
    except orjson.JSONDecodeError:
        value = _recover(front, doc, number)
        if value is None:
            return None
    if "\ufffd" in doc:
        front.problem("JSON holding invalid UTF-8 (replaced by U+FFFD)", number)
    out: list[Text] = []
    n_rec = 0
    for rec, outer in records_of(value):
        n_rec += 1
        t = front.record(rec, outer, number)
        if t is None:
            continue
        if front.partial:
            t.text = front.partial + t.text
            front.partial = ""
        if t.partial:
            front.partial = t.text
            continue
        if start:
            t.text = body[:start] + t.text
        out += redraws(t)
    if n_rec == 0:
        front.problem("JSON values that are no log record (not an object)", number)
        return None
    if not out and not front.partial:
        return None  # nothing in it we can read: the line itself stays (an unparsed line)
    return out  # (empty: a docker line's first part, held in ``front.partial``)


_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
_JUNK = re.compile("[\ufffd\x00-\x08\x0b\x0c\x0e-\x1f]")


def _recover(front: Front, doc: str, number: int) -> Any:
    """A line that is not valid JSON: the records of an array before the point where it breaks off
    (a cut export), or None (noted: truncated, or not JSON at all; not noted: binary junk, which
    framing counts as such)."""
    if _JUNK.search(doc) or '":' not in doc:  # binary data, or no key ever began: not a cut record
        return None
    if doc[:1] == "[":
        items, err = items_of(doc, 1)
        if items:
            front.problem(f"a JSON array that breaks off ({err})", number)
            return [v for _pos, v in items]
    stripped = doc.rstrip()
    if stripped.endswith(("}", "]")):
        front.problem("invalid JSON", number)
    else:
        front.problem("a truncated JSON object", number)
    return None


def items_of(text: str, pos: int) -> tuple[list[tuple[int, Any]], str | None]:
    """(offset, value) of each item of the JSON array whose ``[`` is just before ``pos``, as far as it
    is valid, and why it stopped (None: the array closed)."""
    dec = json.JSONDecoder()
    out: list[tuple[int, Any]] = []
    n = len(text)
    ws = " \t\r\n"
    while True:
        while pos < n and text[pos] in ws:
            pos += 1
        if pos >= n:
            return out, "the array never closes"
        if text[pos] == "]":
            return out, None
        try:
            value, end = dec.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            return out, f"invalid JSON at offset {pos}: {exc.msg}"
        except RecursionError:
            return out, f"JSON nested too deep at offset {pos}"
        out.append((pos, value))
        pos = end
        while pos < n and text[pos] in ws:
            pos += 1
        if pos < n and text[pos] == ",":
            pos += 1


def decode_lines(lines: Iterable[Any], front: Front, make: Any) -> Iterator[Any]:
    """``lines`` (framing's ``Line``s) with each JSON record replaced by its text line(s); ``make(line,
    text, cont, stamp, request_id)`` builds a line of the same file and number."""
    for ln in lines:
        body = ln.text
        if body[:1] not in "{[( \t" or not body:
            yield ln
            continue
        got = convert(front, body, ln.number)
        if got is None:
            yield ln
            continue
        if not got:  # the first part of a docker line split in records: it comes whole with its last part
            yield make(ln, "", False, None, None)
            continue
        for t in got:
            yield make(ln, t.text, t.cont, t.stamp, t.request_id)


# -- whole files: pretty-printed documents, newest-first exports --------------------------------


def document_start(head: bytes) -> bool:
    """Is a file that begins with ``head`` one pretty-printed JSON document (``gcloud logging read
    --format=json``, ``aws logs filter-log-events``)? Its first line alone is then no JSON value."""
    s = head.lstrip()
    if s[:1] not in (b"[", b"{"):
        return False
    first = s.split(b"\n", 1)[0].strip()
    try:
        orjson.loads(first)
    except orjson.JSONDecodeError:
        return first in (
            b"[",
            b"{",
            b"[{",
            b"[ {",
        )  # (gcloud's "[" then "  {"; aws's "{" then "    \"events\": [")
    return False


def document_records(text: str, front: Front) -> tuple[list[tuple[int, Text]], int | None]:
    """(line number, text line) of each record of a pretty-printed document, and the offset of what
    follows where it broke off (read on as plain lines), or None when it was read to its end."""
    head = text.lstrip()
    base = len(text) - len(head)
    pos = base + 1
    if head[:1] == "{":
        m = re.compile(
            r'"(events|hits|entries|logRecords|resourceLogs)"\s*:\s*(?:\{\s*"hits"\s*:\s*)?\['
        ).search(text)
        if m is None:
            try:
                value = orjson.loads(text)
            except orjson.JSONDecodeError:
                front.problem("a JSON document that breaks off", 1)
                return [], 0
            return _numbered(front, [(base, value)], text), None
        pos = m.end()
    items, err = items_of(text, pos)
    if head[:1] == "{" and m is not None and m.group(1) == "resourceLogs":
        # an OTLP document (the protocol's own examples/logs.json is pretty-printed): each item is one
        # resource's logs, read through the rest of its batch path as a one-line OTLP request would be
        items = [(at, {"resourceLogs": [value]}) for at, value in items]
    rest = None
    if err is not None:
        line = text.count("\n", 0, items[-1][0] if items else pos) + 1
        front.notes.append(
            f"{front.path}: the JSON document breaks off after {len(items)} records ({err}, "
            f"near line {line}); the records before it are read, the rest as text lines"
        )
        last = items[-1][0] if items else pos
        nxt = text.find("\n", last if items else 0)
        rest = len(text) if nxt < 0 else nxt + 1
        if items:  # the rest starts after the last whole record's end
            _v, end = json.JSONDecoder().raw_decode(text, items[-1][0])
            nl = text.find("\n", end)
            rest = len(text) if nl < 0 else nl + 1
    return _numbered(front, items, text), rest


def _numbered(front: Front, items: list[tuple[int, Any]], text: str) -> list[tuple[int, Text]]:
    out: list[tuple[int, Text]] = []
    line, at = 1, 0
    for pos, value in items:
        line += text.count("\n", at, pos)
        at = pos
        n_rec = 0
        for rec, outer in records_of(value):
            n_rec += 1
            t = front.record(rec, outer, line)
            if t is not None:
                out += [(line, piece) for piece in redraws(t)]
        if n_rec == 0:
            front.problem("JSON values that are no log record (not an object)", line)
    return out


def newest_first(stamps: list[str]) -> bool:
    """Do these records' stamps (in file order) go back in time? (Loki's and gcloud's default order.)"""
    times = [t for t in (epoch(s) for s in stamps) if t is not None]
    if len(times) < 2:
        return False
    down = sum(1 for a, b in zip(times, times[1:], strict=False) if b < a)
    up = sum(1 for a, b in zip(times, times[1:], strict=False) if b > a)
    return times[-1] < times[0] and down > up


def needs_whole(head: bytes) -> bool:
    """Must a file that begins with ``head`` be read whole (a pretty-printed document, JSON records
    newest first)? Then it cannot be cut into ranges (``parsers.chunks``)."""
    if document_start(head):
        return True
    s = head.lstrip()
    if s[:1] not in (b"{", b"["):
        return False
    stamps = []
    front = Front("")
    for raw in s.split(b"\n")[:200]:
        got = convert(front, raw.decode("utf-8", "replace"), 0)
        for t in got or ():
            if t.stamp is not None:
                stamps.append(t.stamp)
    return newest_first(stamps)


__all__ = [
    "FIELDS",
    "Front",
    "convert",
    "decode_lines",
    "document_records",
    "document_start",
    "epoch",
    "newest_first",
    "records_of",
    "stamp_text",
    "text_of",
]
