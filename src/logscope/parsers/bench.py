"""Client benchmark results: `vllm bench serve` / `benchmark_serving.py` and `sglang.bench_serving`.

Both clients ``print()`` a result block with no log prefix (see docs/formats, vLLM §7 and SGLang §10)::

    ============ Serving Benchmark Result ============
    Successful requests:                     1000
    Benchmark duration (s):                  23.73
    ---------------Time to First Token----------------
    Mean TTFT (ms):                          9408.20
    ==================================================

Rows are ``"{:<40} {:<10}"`` (ints, strings) or ``"{:<40} {:<10.2f}"`` (floats); which rows appear
changed with every version (``Total Token`` / ``Total token``, SGLang 0.4's ``Max reqeuest
concurrency``, percentiles, the speculative-decoding section with per-position rows), and the oldest
vLLM script printed ``Label: value unit`` without alignment. So a block is not one fixed grammar but:

* a **record**: the pipeline joins the block's lines into one record (``opens`` / ``accepts`` below
  are its block rule: header or a first row, then rows, section rules, the closing rule);
* a **grammar** (``BLOCK``): header (or a recognised first row), then the body; the body is split
  into rows by the row grammar (``ROW``), the same in both executions, and each row's label is looked
  up in one table (``_LABELS``) that maps it to a ``bench_result`` field. Unknown rows go to ``extra``.

Certainty over completeness: a row cut mid-value (a clipped terminal, an excerpt boundary) must not
give a wrong number. Floats are always printed with two decimals, so a float row without them was
cut; an int or string row is taken as cut when the block kept its column padding elsewhere and this
row lost it, or when it reaches the width at which a float row was clipped. Such rows are dropped
(listed in ``extra["cut_rows"]``, not counted in ``rows``); the block keeps what is certain.

``--save-result`` JSON (vLLM) and ``--output-file`` JSONL (SGLang, with ``Infinity``) files are read
whole by ``result_file_events``: one ``bench_result`` per object.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import zlib
from dataclasses import dataclass, field
from typing import Any

from logscope.events import BenchResult
from logscope.parsers.grammar import Alt, End, Grammar, Leaf, Seq

__all__ = ["BENCH_GRAMMARS", "BLOCK", "ROW", "accepts", "opens", "parse_block", "result_file_events"]

# -- the lines of a block -------------------------------------------------------------------------
# Patterns are shared by the grammars (Leaf: no capturing groups) and the record-joining rule.
HEADER_PATTERN = r"[ \t]*=+[ \t]?[A-Za-z][\w /()-]*?Benchmark Result[ \t]?=*"
CLOSE_PATTERN = r"[ \t]*={10,}[ \t]*"
SECTION_PATTERN = r"[ \t]*-{3,}[^-\n][^\n]*"  # a title in dashes (its right end may be clipped)
# a header-less block starts with one of its usual first rows (vLLM, old vLLM, SGLang)
OPENER_PATTERN = r"[ \t]*(?:Successful requests[ \t]*:[ \t]*\d|Backend:[ \t]{2,}\S)"

_HEADER_RX = re.compile(HEADER_PATTERN + r"[ \t]*")
_CLOSE_RX = re.compile(CLOSE_PATTERN)
_SECTION_RX = re.compile(SECTION_PATTERN)
_OPENER_RX = re.compile(OPENER_PATTERN)
_OPEN_CHARS = frozenset("=SB \t")

# one row: "Label (unit):<spaces>value<padding>"; the value may hold single spaces ("not set", "12.5 ms")
ROW = Grammar(
    "bench.row",
    "bench_result",
    (":",),
    Seq(
        Leaf(r"[ \t]*", "indent"),
        Leaf(r"[^:\n]*[^:\s]", "label"),
        ":",
        Leaf(r"[ \t]*", "gap"),
        Leaf(r"(?:\S+(?:[ \t]\S+)*+)?", "value"),
        Leaf(r"[ \t]*", "pad"),
        End(),
    ),
)

_MAX_BLOCK_LINES = 200  # a result block has ~60 lines; beyond this it is not one


def opens(text: str) -> bool:
    """Does this prefix-less line start a result block (its header, or a usual first row)?"""
    if text[:1] not in _OPEN_CHARS:  # cheap: called on every line without an engine header
        return False
    return bool(_HEADER_RX.fullmatch(text) or _OPENER_RX.match(text))


def accepts(block: str, text: str) -> str | None:
    """Does ``text`` continue the block whose lines so far are ``block``?

    ``"more"``: a row, a section rule or one blank line; ``"last"``: the closing rule; ``None``: the
    block ended before this line. Rows are taken when their label is known or when they are aligned
    like the block's rows (the value after a run of spaces), so that a cut block does not swallow the
    ``name: message`` lines printed after it.
    """
    last = block[block.rfind("\n") + 1 :]
    if block.count("\n") >= _MAX_BLOCK_LINES:
        return None
    if not text.strip():
        return "more" if last.strip() else None  # one blank line at most
    if _CLOSE_RX.fullmatch(text):
        return "last"
    if _HEADER_RX.fullmatch(text):
        return None  # the next block
    if _SECTION_RX.fullmatch(text):
        return "more"
    f = ROW.match(text)
    if f is None:
        return None
    label, aligned = f["label"], len(f["gap"]) >= 2
    if re.search(r"(?m)^[ \t]*" + re.escape(label) + r"[ \t]*:", block):
        return None  # a row seen already: the next result (a sweep printed without progress bars)
    if _norm(label)[0] in _PRE_RUN and not aligned:
        return None  # printed before a run ("Traffic request rate: 8.0"), not a row of this result
    if aligned or _lookup(label) is not None:
        return "more"
    return None


# -- labels ---------------------------------------------------------------------------------------
_UNIT = re.compile(r"\s*\((ms|s|tok/s|req/s|%|rps)\)$", re.IGNORECASE)
_STAT = re.compile(r"(mean|median|std|max|min|p\d+(?:\.\d+)?) (ttft|tpot|itl|e2el|e2e latency)")
_POSITION = re.compile(r"position (\d+)")
_UNIT_SLUG = {"ms": "ms", "s": "s", "tok/s": "tok_s", "req/s": "req_s", "%": "pct", "rps": "rps"}

# kinds: int; f2 (always printed with 2 decimals); num (int or float); str; conc (int or "not set");
# rate (float or "inf"); list (a label-only row whose sub-rows follow)
_LABELS: dict[str, tuple[str, str]] = {
    "backend": ("backend", "str"),
    "traffic request rate": ("request_rate", "rate"),
    "request rate configured": ("request_rate", "rate"),
    "max request concurrency": ("max_concurrency", "conc"),
    "maximum request concurrency": ("max_concurrency", "conc"),
    "successful requests": ("successful_requests", "int"),
    "failed requests": ("failed_requests", "int"),
    "benchmark duration": ("duration_s", "f2"),
    "total input tokens": ("total_input_tokens", "int"),
    "total input text tokens": ("total_input_text_tokens", "int"),
    "total input vision tokens": ("total_input_vision_tokens", "int"),
    "total generated tokens": ("total_output_tokens", "int"),
    "total generated tokens (retokenized)": ("total_output_tokens_retokenized", "int"),
    "request throughput": ("request_throughput", "f2"),
    "request goodput": ("request_goodput", "f2"),
    "input token throughput": ("input_tok_s", "f2"),
    "output token throughput": ("output_tok_s", "f2"),
    "peak output token throughput": ("peak_output_tok_s", "f2"),
    "peak concurrent requests": ("peak_concurrent_requests", "num"),
    "total token throughput": ("total_tok_s", "f2"),
    "rtfx (inverse real-time factor)": ("rtfx", "f2"),
    "concurrency": ("concurrency", "f2"),
    "accept length": ("accept_length", "f2"),
    "acceptance length": ("accept_length", "f2"),
    "acceptance rate": ("acceptance_rate_pct", "f2"),
    "drafts": ("drafts", "int"),
    "draft tokens": ("draft_tokens", "int"),
    "accepted tokens": ("accepted_tokens", "int"),
    "per-position acceptance": ("per_position_acceptance_pct", "list"),
}
_PRE_RUN = {"traffic request rate", "maximum request concurrency"}  # also printed, unaligned, before a run
_FIELDS = set(BenchResult.model_fields)
# rows only SGLang's client prints (the rest is shared, or vLLM's)
_SGLANG_ROWS = {
    "backend",
    "traffic request rate",
    "max request concurrency",
    "concurrency",
    "accept length",
    "total generated tokens (retokenized)",
    "total input text tokens",
    "total input vision tokens",
}


def _norm(label: str) -> tuple[str, str | None]:
    """(normalised label, unit) of a printed label: case, spacing, the 0.4 typo, the unit apart."""
    text = " ".join(label.split()).lower().replace("reqeuest", "request")
    m = _UNIT.search(text)
    if m is None:
        return text, None
    return text[: m.start()], m.group(1).lower()


def _lookup(label: str) -> tuple[str, str] | None:
    """(field, kind) of a printed label, or None when the label is not known."""
    key, _unit = _norm(label)
    if key in _LABELS:
        return _LABELS[key]
    m = _STAT.fullmatch(key)
    if m is not None:
        metric = "e2e" if m.group(2).startswith("e2e") else m.group(2)
        return f"{m.group(1)}_{metric}_ms", "f2"
    if _POSITION.fullmatch(key):
        return "position", "f2"
    return None


def _slug(label: str) -> str:
    key, unit = _norm(label)
    base = re.sub(r"[^a-z0-9.]+", "_", key).strip("_")
    return f"{base}_{_UNIT_SLUG[unit]}" if unit else base


# -- values ---------------------------------------------------------------------------------------
_INT_RX = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+|[-+]?\d+")
_F2_RX = re.compile(r"[-+]?\d+\.\d\d|[-+]?(?:nan|inf)", re.IGNORECASE)
_NUM_RX = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)", re.IGNORECASE)
# the oldest vLLM script: "Benchmark duration: 12.345678 s", "Request throughput: 4.12 requests/s"
_WITH_UNIT = re.compile(r"(?P<num>[-+]?\d+(?:\.\d+)?) (?P<unit>s|ms|requests/s|tokens/s|tok/s|req/s)")
_UNSET = {"not set", "none", "null", "n/a", "-"}
_PCT = re.compile(r"[-+]?\d+(?:\.\d+)?%")  # SGLang's "Cache hit rate: 29.0%"


@dataclass
class _Row:
    label: str
    value: str
    indent: int
    pad: int
    width: int  # length of the line as printed (after envelopes)
    section: str | None


@dataclass
class Body:
    """A block's body split into rows (the grammar's second step)."""

    rows: list[_Row] = field(default_factory=list)
    complete: bool = False


def parse_block(body: str) -> Body:
    """Split a block's body (everything after the header) into rows, sections and the closing rule."""
    out = Body()
    section: str | None = None
    for text in body.split("\n"):
        if _CLOSE_RX.fullmatch(text):
            out.complete = True
            break
        if _SECTION_RX.fullmatch(text):
            section = text.strip().strip("-").strip()
            continue
        f = ROW.match(text)
        if f is not None:
            out.rows.append(_Row(f["label"], f["value"], len(f["indent"]), len(f["pad"]), len(text), section))
    return out


def _to_num(value: str) -> int | float | None:
    try:
        return int(value.replace(",", ""))
    except ValueError:
        return _finite(float(value))


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _number(kind: str, value: str, ended: bool) -> tuple[bool, Any]:
    """(certain, value) of a printed value for a row of ``kind``.

    ``ended``: padding follows the value on its line, so the value was printed whole.
    """
    low = value.lower()
    if kind in ("str", "unknown") and not _NUM_RX.fullmatch(value):
        return True, value
    if kind in ("conc", "rate") and (low in _UNSET or not _NUM_RX.fullmatch(value)):
        return True, None  # "not set", "inf", "trace": no number
    m = _WITH_UNIT.fullmatch(value)
    if m is not None:  # a unit after the number: the value was not cut
        return True, float(m.group("num"))
    if kind in ("int", "conc"):
        return (True, int(value.replace(",", ""))) if _INT_RX.fullmatch(value) else (False, None)
    if kind == "f2" and not ended and not _F2_RX.fullmatch(value):
        return False, None  # floats print with two decimals: fewer means the line was cut
    if _NUM_RX.fullmatch(value):
        return True, _to_num(value)
    return False, None


def _fields(title: str | None, body: Body) -> dict[str, Any] | None:
    """The event fields of a parsed block, or None when it holds too few rows to be one."""
    rows = body.rows
    # did this paste keep the column padding? (then a short value without it was cut)
    padded = any(r.pad for r in rows if len(r.value) < 10)
    # width at which float rows were visibly cut before the block's end: a clipped terminal (a cut
    # last row alone is an excerpt boundary, which says nothing about the rows above it)
    clipped: int | None = None
    for r in rows[:-1]:
        known = _lookup(r.label)
        if known is not None and known[1] == "f2" and not _number("f2", r.value, r.pad > 0)[0]:
            clipped = r.width if clipped is None else min(clipped, r.width)

    out: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    cut: list[str] = []
    positions: list[float] = []
    nrows = 0
    sglang = False
    parent = ""  # the last row without indent: an indented unknown row is one of its parts
    for r in rows:
        known = _lookup(r.label)
        fld, kind = known if known is not None else (_slug(r.label), "unknown")
        if not r.indent:
            parent = fld
        elif known is None and parent:
            fld = f"{parent}_{fld}"
        if kind == "list" or not r.value:
            continue  # a label-only row: its sub-rows follow
        certain, value = _number(kind, r.value, r.pad > 0)
        if certain and r.pad == 0 and not (_F2_RX.fullmatch(r.value) or _PCT.fullmatch(r.value)):
            # a value without its padding: cut, when the block kept padding (values shorter than the
            # column are padded) or when the line reaches the width at which the terminal clipped
            if (padded and len(r.value) < 10) or (clipped is not None and r.width >= clipped):
                certain = False
        if not certain:
            cut.append(r.label.strip())
            continue
        nrows += 1
        key, _unit = _norm(r.label)
        sglang = sglang or key in _SGLANG_ROWS or "e2e latency" in key
        if known is None and isinstance(value, str) and _PCT.fullmatch(value):
            fld, value = (fld if fld.endswith("_pct") else f"{fld}_pct"), float(value[:-1])
        if fld == "position":
            m = _POSITION.fullmatch(key)
            if m is not None and len(positions) == int(m.group(1)) and value is not None:
                positions.append(float(value))
            continue
        if kind == "rate" and value is None and r.value.lower() not in _UNSET:
            extra["request_rate"] = r.value  # "inf" (no limit) or "trace"
        if known is not None and fld in _FIELDS:
            out[fld] = value
        else:
            extra[fld] = value
    if nrows == 0 or (title is None and nrows < 2):
        return None
    if positions:
        out["per_position_acceptance_pct"] = positions
    if title is not None and title != "Serving Benchmark Result":
        extra["title"] = title
    if cut:
        extra["cut_rows"] = cut
    out.update(client="sglang" if sglang else "vllm", rows=nrows, complete=body.complete, extra=extra)
    return out


def _build(f: dict[str, Any]) -> dict[str, Any] | None:
    title = f.get("title")
    return _fields(title.strip(" \t=") if title else None, f["body"])


BLOCK = Grammar(
    "bench.result_block",
    "bench_result",
    ("Benchmark Result", "Successful requests", "Backend:"),
    Alt(
        Seq(Leaf(HEADER_PATTERN, "title"), Leaf(r"[ \t]*\n"), Leaf(r"[\s\S]*", "body", parse_block)),
        # no header (cut by a paste): a usual first row, and at least one more line
        Leaf(rf"(?={OPENER_PATTERN})[^\n]*\n[\s\S]*", "body", parse_block),
    ),
    build=_build,
)

BENCH_GRAMMARS: list[Grammar] = [BLOCK]
"""The grammars of client result blocks, for every dialect's list (the blocks have no log prefix)."""


# -- JSON / JSONL result files ----------------------------------------------------------------------
_JSON_FIELDS = {
    "backend": "backend",
    "request_rate": "request_rate",
    "max_concurrency": "max_concurrency",
    "completed": "successful_requests",
    "failed": "failed_requests",
    "duration": "duration_s",
    "total_input_tokens": "total_input_tokens",
    "total_input_text_tokens": "total_input_text_tokens",
    "total_input_vision_tokens": "total_input_vision_tokens",
    "total_output_tokens": "total_output_tokens",
    "total_output_tokens_retokenized": "total_output_tokens_retokenized",
    "request_throughput": "request_throughput",
    "request_goodput": "request_goodput",
    "input_throughput": "input_tok_s",
    "output_throughput": "output_tok_s",
    "total_token_throughput": "total_tok_s",
    "total_throughput": "total_tok_s",
    "max_output_tokens_per_s": "peak_output_tok_s",
    "max_concurrent_requests": "peak_concurrent_requests",
    "rtfx": "rtfx",
    "concurrency": "concurrency",
    "accept_length": "accept_length",
    "spec_decode_acceptance_rate": "acceptance_rate_pct",
    "spec_decode_acceptance_length": "accept_length",
    "spec_decode_num_drafts": "drafts",
    "spec_decode_draft_tokens": "draft_tokens",
    "spec_decode_accepted_tokens": "accepted_tokens",
}
_JSON_STAT = re.compile(r"(mean|median|std|max|min|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el|e2e_latency)_ms")
# per-request lists (--save-detailed / --output-details) and the server's whole state: not results
_JSON_SKIP = {
    "input_lens",
    "output_lens",
    "ttfts",
    "itls",
    "generated_texts",
    "errors",
    "start_times",
    "cached_tokens",
    "cached_tokens_details",
    "server_info",
    "rps_change_events",
}
_JSON_KEYS = ("duration", "completed", "request_throughput")
_INT_FIELDS = {n for n, f in BenchResult.model_fields.items() if f.annotation in (int, int | None)}


def _is_result(obj: Any) -> bool:
    return isinstance(obj, dict) and "duration" in obj and ("completed" in obj or "request_throughput" in obj)


def _json_fields(obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in obj.items():
        if key in _JSON_SKIP or (isinstance(value, list | dict) and len(value) > 64):
            continue
        m = _JSON_STAT.fullmatch(key)
        fld = _JSON_FIELDS.get(key)
        if fld is None and m is not None:
            metric = "e2e" if m.group(2).startswith("e2e") else m.group(2)
            fld = f"{m.group(1)}_{metric}_ms"
            if fld not in _FIELDS:
                extra[fld] = _clean(value)
                continue
        if fld is None:
            extra[key] = _clean(value)
            continue
        if isinstance(value, str) and value.lower() in ("inf", "infinity"):
            value = math.inf
        if isinstance(value, float) and not math.isfinite(value):
            if key == "request_rate" and value > 0:
                extra["request_rate"] = "inf"
            value = None
        if fld in _INT_FIELDS and isinstance(value, float) and value.is_integer():
            value = int(value)
        if fld == "backend" and value is not None:
            value = str(value)
        elif isinstance(value, str):
            try:
                value = _to_num(value)
            except ValueError:
                extra[key] = value  # e.g. SGLang's request_rate "trace"
                continue
        out[fld] = value
    per_pos = obj.get("spec_decode_per_position_acceptance_rates")
    if isinstance(per_pos, list) and per_pos and all(isinstance(x, int | float) for x in per_pos):
        out["per_position_acceptance_pct"] = _as_pct(
            [float(x) for x in per_pos], out.get("acceptance_rate_pct")
        )
        extra.pop("spec_decode_per_position_acceptance_rates", None)
    sglang = any(
        k in obj
        for k in (
            "total_throughput",
            "mean_e2e_latency_ms",
            "total_output_tokens_retokenized",
            "server_info",
            "dataset_name",
        )
    )
    out.update(
        client="sglang" if sglang else "vllm",
        complete=True,
        rows=sum(1 for v in out.values() if v is not None) + len(extra),
        extra=extra,
    )
    return out


def _clean(value: Any) -> Any:
    """Non-finite floats as text ("inf", "nan"): JSON output must stay standard JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


def _as_pct(rates: list[float], overall_pct: float | None) -> list[float]:
    """Per-position acceptance in percent, whether the file holds fractions or percents.

    With a fixed draft length the positions' mean is the overall acceptance rate, which tells the
    two apart; without it, values all at most 1 are taken as fractions.
    """
    mean = sum(rates) / len(rates)
    if overall_pct is not None:
        as_is, scaled = abs(mean - overall_pct), abs(mean * 100 - overall_pct)
        return rates if as_is <= scaled else [round(x * 100, 6) for x in rates]
    return rates if max(rates) > 1.0 else [round(x * 100, 6) for x in rates]


def _read_text(path: str, limit: int | None = None) -> bytes:
    from logscope.parsers.framing import is_gzip

    opener = gzip.open if is_gzip(path) else open
    with opener(path, "rb") as fh:
        return fh.read() if limit is None else fh.read(limit)


def result_file_events(path: str, stats: Any = None) -> list[BenchResult] | None:
    """``bench_result`` events of a client's result file, or None when ``path`` is not one.

    Detected by content, never by the name alone: JSON (``{`` or ``[`` first, with a result's keys in
    the first MB), JSON lines, AIPerf's CSV (``Metric,avg,...`` first) and YAML (GuideLLM's
    ``benchmarks:``, a BR report's ``version:`` with ``results:``). vLLM's ``--save-result`` JSON and
    SGLang's JSONL are read here (Python's json reader takes SGLang's ``Infinity``); the other tools'
    files by ``logscope.parsers.bench_files``. ``stats`` (a ``ReadStats``) is updated with the file and
    its lines when given.
    """
    if path == "-":
        return None
    try:
        head = _read_text(path, 1 << 20)
    except (OSError, EOFError, zlib.error):  # (gzip.BadGzipFile is an OSError) corrupt: the reader says so
        return None
    lead = head.lstrip()
    form = _sniff(lead, head)
    if form is None:
        return None
    try:
        data = _read_text(path)
    except (OSError, EOFError, zlib.error):
        return None
    text = data.decode("utf-8", errors="replace")
    found = _parse(form, text)
    events = [
        BenchResult(file=path, line=n, raw=raw if len(raw) <= 16384 else raw[:16384] + " …", **fields)
        for n, fields, raw in found
    ]
    if not events:
        return None
    if stats is not None:
        nlines = text.count("\n") + (0 if text.endswith("\n") else 1)
        stats.files.append(path)
        stats.bytes += len(data)
        stats.lines += nlines
        stats.text_lines += sum(1 for ln in text.splitlines() if ln.strip())
    return events


# keys of the other tools' JSON results (bench_files): AIPerf, GuideLLM, genai-bench, inference-perf, BR
_OTHER_KEYS = (
    b'"time_to_first_token"',
    b'"benchmark_phase"',
    b'"benchmarks"',
    b'"aggregated_metrics"',
    b'"successes"',
    b'"request_performance"',
    b'"output_token_times"',
    b'"request_throughput"',
)
_YAML_HEAD = re.compile(
    rb"\A(?:(?:---|#[^\n]*)?[ \t]*\r?\n)*(?:benchmarks|version|run|results):[ \t]*(?:\S[^\n]*)?\r?\n"
)


def _sniff(lead: bytes, head: bytes) -> str | None:
    """The form of a result file from its first MB: "json", "csv", "yaml", or None (not a result)."""
    if lead.startswith((b"{", b"[")):
        keys = _JSON_KEYS_B + _OTHER_KEYS
        return "json" if any(k in head for k in keys) else None
    if lead.startswith(b"Metric,avg,"):
        return "csv"
    if _YAML_HEAD.match(lead) and (b"\nbenchmarks:" in b"\n" + lead or b"request_performance:" in head):
        return "yaml"
    return None


_JSON_KEYS_B = tuple(b'"' + k.encode() + b'"' for k in _JSON_KEYS)


def _parse(form: str, text: str) -> list[tuple[int, dict[str, Any], str]]:
    """(line, fields, raw) of each result in a result file's text."""
    from logscope.parsers import bench_files

    if form == "csv":
        fields = bench_files.read_csv(text)
        return [] if fields is None else [(1, fields, text.strip())]
    if form == "yaml":
        import yaml

        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError:
            return []
        return [
            (1, f, text.strip() if len(found) == 1 else "")
            for found in [bench_files.read_object(doc)]
            for f in found
        ]
    objects: list[tuple[int, Any, str]] = []
    try:
        whole = json.loads(text)
    except ValueError:
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip().startswith("{"):
                try:
                    objects.append((n, json.loads(line), line))
                except ValueError:
                    continue
        out = [(n, _json_fields(o), raw) for n, o, raw in objects if _is_result(o)]
        records = bench_files.read_records(o for _n, o, _raw in objects)
        if records is not None:  # AIPerf's per-request records: one summary for the file
            out.append((objects[0][0], records, ""))
        return out
    first = len(text) - len(text.lstrip())
    line1 = text.count("\n", 0, first) + 1
    other = bench_files.read_object(whole)
    if other:
        return [(line1, f, text.strip() if len(other) == 1 else "") for f in other]
    items = whole if isinstance(whole, list) else [whole]
    objects = [(line1, o, text.strip() if len(items) == 1 else "") for o in items]
    return [(n, _json_fields(o), raw) for n, o, raw in objects if _is_result(o)]
