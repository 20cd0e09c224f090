"""What a report says, as document blocks (``render.doc``), at a chosen level of detail.

Level 0 is everything; each higher level says less, so that a big run's Markdown fits a GitHub
comment without cutting anything mid-table:

0. every section with its detail tables (up to ``ROWS[0]`` rows each), every evidence line (up to
   ``EVIDENCE[0]`` per finding)
1. detail tables capped (``ROWS[1]`` rows each, the rest counted), fewer evidence lines
2. sections as their key figures and method only, one or two evidence lines per finding
3. the summary table and the findings (message, fix), no evidence, no sections
4. the summary table and one line per finding (``max_findings`` of them at most)
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from contextvars import ContextVar
from typing import Any

from pydantic import BaseModel

from logscope.analyses.registry import ANALYSES
from logscope.analyses.report import Report
from logscope.render.doc import (
    Block,
    Cell,
    Code,
    FigureRef,
    Finding,
    Heading,
    Inline,
    Para,
    Span,
    Table,
    b,
    c,
    clean,
    prose,
    t,
)
from logscope.render.lifetimes import lifetimes_blocks

LEVELS = 5
ROWS = (2000, 25, 0, 0, 0)  # detail-table rows per level (0: no detail tables); the rest are counted
EVIDENCE = (20, 5, 2, 0, 0)  # evidence lines per finding
EVIDENCE_CHARS = (2000, 500, 300, 0, 0)  # an evidence line longer than this is shown cut, saying how much
SEVERITY_ORDER = {"error": 0, "critical": 0, "warning": 1, "warn": 1, "info": 2, "note": 3}
JSON_HINT = "the JSON report (`--format json`)"

SECTION_TITLES = {a.name: a.title for a in ANALYSES if a.title}  # in the order the sections are shown
OPTIONAL_SECTIONS = tuple(a.name for a in ANALYSES if a.optional)
# optional sections shown only when they hold something (a run without stalls says so in its JSON)
SHOWN_WHEN = {"stalls": lambda res: bool(getattr(res, "spans", None))}
SECTION_FIGURES = {a.name: a.figures for a in ANALYSES if a.figures}


# -- numbers ---------------------------------------------------------------------------------------


def num(x: Any, unit: str = "") -> str:
    """A number as people read it: thousands separators, few decimals, no trailing zeros."""
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        s = f"{x:,}"
    elif isinstance(x, float):
        if not math.isfinite(x):
            return str(x)
        ax = abs(x)
        nd = 1 if ax >= 100 else 2 if ax >= 1 or ax == 0 else 3
        s = f"{x:,.{nd}f}"
        if "." in s:
            s = s.rstrip("0").rstrip(".")
    else:
        return str(x)
    return f"{s} {unit}".rstrip() if unit else s


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{num(x)} %"


def seconds(x: float | None) -> str:
    if x is None:
        return "n/a"
    if x >= 120:
        return f"{num(x)} s ({x / 60:.1f} min)"
    return f"{num(x)} s"


_ONE_FILE: ContextVar[bool] = ContextVar("logscope_render_one_file", default=False)


def line_ref(file: str | None, line: int | None, end: int | None = None) -> str:
    """``file:12-14``, or ``lines 12-14`` when the report is of one file (see ``report_doc``)."""
    if line is None:
        return ""
    where = f"{line}-{end}" if end is not None and end != line else f"{line}"
    if file and not _ONE_FILE.get():
        return f"{file}:{where}"
    return f"lines {where}" if "-" in where else f"line {where}"


def _natural(s: str) -> list[Any]:
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", s)]


def ranks_text(ranks: Sequence[Any] | dict[str, Any]) -> str:
    """``TP0, TP1`` or, for counts per rank, ``TP0: 4, TP1: 4``; many ranks shortened."""
    if not ranks:
        return ""
    if isinstance(ranks, dict):
        names = sorted((str(k) for k in ranks), key=_natural)
        counts = {str(k): v for k, v in ranks.items()}
        if len(names) > 6:
            same = len({counts[n] for n in names}) == 1
            each = f", {counts[names[0]]} each" if same else ""
            return f"{len(names)} ranks ({names[0]} … {names[-1]}){each}"
        return ", ".join(f"{n}: {counts[n]}" for n in names)
    names = sorted((str(r) for r in ranks), key=_natural)
    if len(names) > 6:
        return f"{len(names)} ranks ({names[0]} … {names[-1]})"
    return ", ".join(names)


# -- findings --------------------------------------------------------------------------------------


def finding_dict(f: Any) -> dict[str, Any]:
    """A finding as a dict with the keys of docs/contract.md, whether the digest gave a model or a dict."""
    d: dict[str, Any] = f.model_dump(mode="json") if isinstance(f, BaseModel) else dict(f)
    d.setdefault("code", "?")
    d.setdefault("severity", "info")
    d.setdefault("title", "")
    d.setdefault("message", "")
    d["evidence"] = [
        e.model_dump(mode="json") if isinstance(e, BaseModel) else dict(e) for e in d.get("evidence") or []
    ]
    return d


def sorted_findings(findings: Iterable[Any]) -> list[dict[str, Any]]:
    fs = [finding_dict(f) for f in findings]
    return sorted(fs, key=lambda d: (SEVERITY_ORDER.get(str(d["severity"]).lower(), 9), str(d["code"])))


def severity_counts(fs: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for f in fs:
        s = str(f["severity"]).lower()
        counts[s] = counts.get(s, 0) + 1
    parts = [
        f"{n} {s}{'s' if n != 1 and not s.endswith('s') else ''}"
        for s, n in sorted(counts.items(), key=lambda kv: SEVERITY_ORDER.get(kv[0], 9))
    ]
    return ", ".join(parts) if parts else "none"


def evidence_lines(
    evidence: list[dict[str, Any]], limit: int, chars: int = EVIDENCE_CHARS[0]
) -> tuple[list[str], int]:
    """``file:line: text`` lines (at most ``limit``), and how many were left out."""
    out = []
    for e in evidence[:limit]:
        text = clean(str(e.get("text") or ""), chars).replace("\n", "\n    ")
        out.append(f"{e.get('file', '')}:{e.get('line', '')}: {text}")
    return out, max(0, len(evidence) - limit)


def finding_blocks(f: dict[str, Any], level: int) -> Finding:
    body: list[Para | Code | Table] = []
    if f.get("message"):
        body.append(Para(prose(str(f["message"]))))
    if f.get("fix"):
        body.append(Para((b("Fix: "), *prose(str(f["fix"])))))
    meta: list[Span] = []
    if f.get("confidence") is not None:
        meta += [t("confidence "), c(f["confidence"])]
    if f.get("count") is not None:
        meta += [t(", " if meta else ""), t(f"seen {num(f['count'])} time(s)")]
    if f.get("ranks"):
        meta += [t(", " if meta else ""), t("on "), c(ranks_text(f["ranks"]))]
    if f.get("lifetime") is not None:
        meta += [t(", " if meta else ""), t(f"in server lifetime {f['lifetime']}")]
    if meta and level <= 2:
        body.append(Para(tuple(meta), "meta"))
    keep = EVIDENCE[min(level, LEVELS - 1)]
    if keep and f["evidence"]:
        lines, more = evidence_lines(f["evidence"], keep, EVIDENCE_CHARS[min(level, LEVELS - 1)])
        body.append(Code(lines))
        if more:
            body.append(Para(prose(f"… and {more} more evidence line(s) in {JSON_HINT}."), "note"))
    return Finding(severity=str(f["severity"]).lower(), code=str(f["code"]), title=str(f["title"]), body=body)


# -- the summary table -----------------------------------------------------------------------------


def _na(rep: Report, section: str) -> Inline:
    return (t("not applicable: "), *prose(rep.not_applicable.get(section, "nothing in the log")))


def trend_words(trend: float | None, stationary: bool | None) -> str:
    """``; trend -3.1 %, stationary`` or ``; drifts -61.7 % over the segment (not stationary)``."""
    if trend is None:
        return ""
    if stationary is False:
        return f"; drifts {num(trend)} % over the segment (not stationary: the mean is no steady rate)"
    return f"; trend {num(trend)} %, stationary"


def load_words(dl: Any) -> str:
    """One line of decode under load: rate, running, windows, per request, prompt share, trend."""
    v = (
        f"{num(dl.mean_tok_s)} tok/s mean (median {num(dl.median_tok_s)}, {num(dl.min_tok_s)}-{num(dl.max_tok_s)}) "
        + (
            f"at {dl.concurrency} running"
            if dl.steady
            else f"at running {dl.running_min}-{dl.running_max} (no steady count)"
        )
        + f", {dl.samples} windows over {num(dl.duration_s)} s"
        + (
            f", prefills included ({dl.prefill_windows} with prefill)"
            if dl.prefill_windows
            else ", no prefill in them"
        )
    )
    if dl.per_request_tok_s is not None:
        v += f"; per request {num(dl.per_request_tok_s)} tok/s = {num(dl.ms_per_token)} ms/token"
    if dl.prompt_share_pct is not None:
        v += f"; {num(dl.prompt_share_pct)} % of the windows' tokens were prompt tokens"
    if getattr(dl, "partial_windows", 0):
        v += "; a lower bound (its window reaches back into idle time)"
    return v + trend_words(dl.trend_pct, dl.stationary)


def summary_rows(rep: Report, findings: list[dict[str, Any]] | None = None) -> list[tuple[Cell, ...]]:
    rows: list[tuple[Cell, ...]] = []

    def add(name: str, value: Inline) -> None:
        rows.append(((b(name),), value))

    eng = " ".join(x for x in (rep.engine or "unknown engine", rep.engine_version or "") if x)
    add("Run", (c(eng), t(f", {num(rep.lines)} lines in {len(rep.files)} file(s)")))
    sd = rep.stable_decode
    if sd is not None:
        add(
            "Stable decode",
            (
                t(
                    f"{num(sd.mean_tok_s)} tok/s mean (median {num(sd.median_tok_s)}, "
                    f"{num(sd.min_tok_s)}-{num(sd.max_tok_s)}) at {sd.concurrency} running, "
                    f"{sd.samples} windows over {num(sd.duration_s)} s; per request "
                    f"{num(sd.per_request_tok_s)} tok/s = {num(sd.ms_per_token)} ms/token"
                    f"{trend_words(sd.trend_pct, sd.stationary)}"
                ),
            ),
        )
    else:
        add("Stable decode", _na(rep, "stable_decode"))
    dl = getattr(rep, "decode_under_load", None)
    if sd is None:  # the usual benchmark: every window holds prefill
        add("Decode under load", (t(load_words(dl)),) if dl is not None else _na(rep, "decode_under_load"))
    pf = rep.prefill
    if pf is not None:
        v = f"{num(pf.mean_tok_s)} tok/s mean (median {num(pf.median_tok_s)}, max {num(pf.max_tok_s)}) over {pf.samples} "
        v += "batches" if pf.source.startswith("SGLang") else "windows"
        if getattr(pf, "measure", "") == "offered_prompt_load":
            v = "offered prompt load " + v + " (vLLM's window averages: not a prefill speed)"
        if pf.chunk_series:
            v += (
                f"; {len(pf.chunk_series)} chunked requests, chunk rate median change "
                f"{num(pf.chunk_decay_median_pct)} % first to last"
            )
        st = pf.decode_starvation
        if st is not None and st.count:
            v += f"; decode starved in {st.count} of {st.prefill_windows} prefill windows"
        add("Prefill", (t(v),))
    else:
        add("Prefill", _na(rep, "prefill"))
    sp = rep.spec_decode
    if sp is not None:
        parts = [f"{sp.verdict}"]
        if sp.mean_acceptance_length is not None:
            parts.append(f"mean acceptance length {num(sp.mean_acceptance_length)}")
        if sp.acceptance_rate_pct is not None:
            parts.append(f"{pct(sp.acceptance_rate_pct)} of drafts accepted")
        if sp.wasted_draft_pct is not None:
            parts.append(f"{pct(sp.wasted_draft_pct)} wasted")
        add("Speculative decoding", (b(parts[0]), t(": " + ", ".join(parts[1:]) if len(parts) > 1 else "")))
    else:
        add("Speculative decoding", _na(rep, "spec_decode"))
    kv = rep.kv_pool
    if kv is not None:
        parts = []
        if kv.tokens is not None:
            parts.append(
                f"{num(kv.tokens)} tokens"
                + (f" ({num(kv.memory_gib)} GiB)" if kv.memory_gib is not None else "")
            )
        if kv.max_model_len is not None:
            parts.append(f"max model len {num(kv.max_model_len)}")
        if kv.max_concurrency is not None:
            parts.append(f"max concurrency {num(kv.max_concurrency)}x")
        if kv.shortfall_pct is not None:
            parts.append(f"{pct(kv.shortfall_pct)} short of one full-length request")
        if kv.overcommit_gib is not None and kv.overcommit_gib > 0:
            parts.append(f"over-committed by {num(kv.overcommit_gib)} GiB")
        if kv.max_running_requests is not None:
            parts.append(f"max running requests {kv.max_running_requests}")
        add("KV pool", (t("; ".join(parts) or "pool lines only"),))
    else:
        add("KV pool", _na(rep, "kv_pool"))
    cs = rep.cold_start
    if cs is not None:
        v = (
            f"{seconds(cs.total_s)} from the first timestamp to ready"
            if cs.total_s is not None
            else "no ready line"
        )
        if cs.phases:
            top = max(
                (p for p in cs.phases if p.seconds is not None), key=lambda p: p.seconds or 0.0, default=None
            )
            if top is not None:
                v += f"; longest phase: {top.name} {num(top.seconds)} s"
        add("Cold start", prose(v))
    else:
        add("Cold start", _na(rep, "cold_start"))
    d = rep.disturbances
    if d is not None:
        parts = []
        if d.oom:
            o = f"{d.oom} OOM"
            if d.oom_rounds and len(d.oom_by_rank) > 1:
                o += f" ({d.oom_rounds} on each of {len(d.oom_by_rank)} ranks)"
            parts.append(o)
        parts += [
            f"{d.runtime_compiles} runtime compiles",
            "unknown preemptions (the log does not count them)"
            if d.preemptions is None
            else f"{d.preemptions} preemptions" + (" (server metrics)" if _from_metrics(d) else ""),
        ]
        if d.retractions:
            parts.append(f"{d.retractions} retractions")
        parts.append(
            f"{d.errors} errors"
            + (
                f" (and {d.benign_errors} at a clean shutdown, not counted)"
                if getattr(d, "benign_errors", 0)
                else ""
            )
        )
        parts += _request_failures(d)
        add("Disturbances", (t(", ".join(parts)),))
    else:
        add("Disturbances", _na(rep, "disturbances"))
    stalls = rep.stalls
    if stalls is not None and stalls.spans:
        kinds: dict[str, int] = {}
        for span in stalls.spans:
            kinds[span.kind] = kinds.get(span.kind, 0) + 1
        add(
            "Stalls",
            (
                t(
                    ", ".join(f"{n} {k}" for k, n in kinds.items()) + " span(s), longest "
                    f"{seconds(max(x.duration_s for x in stalls.spans))}"
                ),
            ),
        )
    rk = rep.ranks
    if rk is not None:
        add(
            "Ranks",
            (
                t(
                    f"{len(rk.ranks)} ranks; "
                    + (
                        "; ".join(f"{im.kind} imbalance on {im.rank}" for im in rk.imbalances)
                        or "no imbalance found"
                    )
                ),
            ),
        )
    if getattr(rep, "requests", None) is not None:
        from logscope.render.requests_doc import requests_summary  # it imports this module

        add("Requests", (t(requests_summary(rep.requests)),))
    if rep.metrics is not None:
        from logscope.render.metrics_doc import metrics_summary  # it imports this module

        add("Server metrics", (t(metrics_summary(rep.metrics)),))
    if rep.slo is not None:
        sl = rep.slo
        add(
            "SLO gates",
            (
                t(
                    ("all passed" if sl.passed else f"{sl.failed} failed, {sl.unknown} unknown")
                    + ": "
                    + "; ".join(f"{ck.gate} {ck.status}" for ck in sl.checks)
                ),
            ),
        )
    fs = findings if findings is not None else sorted_findings(rep.findings)
    add("Findings", (t(f"{len(fs)}: {severity_counts(fs)}" if fs else "none"),))
    cov = rep.coverage
    add(
        "Coverage",
        (
            t(
                f"{num(cov.events)} events from {num(cov.lines)} lines; {num(cov.unparsed)} lines not "
                f"understood, {num(cov.unparsed_candidates)} of them look like a known kind"
            ),
        ),
    )
    return rows


# -- sections --------------------------------------------------------------------------------------


def _kv(rows: list[tuple[str, Inline | str]]) -> Table:
    return Table(("", ""), [((b(k),), (t(v),) if isinstance(v, str) else v) for k, v in rows], key_value=True)


def _capped(
    header: tuple[str, ...],
    rows: list[tuple[Cell, ...]],
    level: int,
    what: str,
    numeric: tuple[bool, ...] = (),
) -> list[Block]:
    limit = ROWS[min(level, LEVELS - 1)]
    if limit == 0 or not rows:
        return []
    out: list[Block] = [Table(header, rows[:limit], numeric)]
    if len(rows) > limit:
        out.append(Para(prose(f"Showing {limit} of {len(rows)} {what}; all are in {JSON_HINT}."), "note"))
    return out


def _method(res: Any) -> list[Block]:
    return [Para((b("Method: "), *prose(res.method)), "method")]


def _stable_decode(sd: Any, level: int) -> list[Block]:
    rows: list[tuple[str, Inline | str]] = [
        (
            "Aggregate decode",
            f"mean {num(sd.mean_tok_s)}, median {num(sd.median_tok_s)}, min {num(sd.min_tok_s)}, "
            f"max {num(sd.max_tok_s)} tok/s",
        ),
        ("Concurrency", f"{sd.concurrency} running requests"),
        (
            "Per request",
            f"{num(sd.per_request_tok_s)} tok/s = {num(sd.ms_per_token)} ms/token (at the peak "
            f"{num(sd.per_request_peak_tok_s)} tok/s = {num(sd.ms_per_token_at_peak)} ms/token)",
        ),
        (
            "Window",
            (
                t(f"{sd.samples} windows, {num(sd.duration_s)} s, "),
                c(line_ref(sd.file, sd.start_line, sd.end_line)),
            ),
        ),
        ("Source", (c(sd.source), t(f" ({sd.engine})"))),
    ]
    _trend_rows(rows, sd)
    out: list[Block] = [_kv(rows), *_method(sd)]
    if sd.excluded:
        out += _capped(
            ("line", "t (s)", "tok/s", "running", "why left out"),
            [
                (
                    (c(line_ref(w.file, w.line)),),
                    (t(num(w.t_s)),),
                    (t(num(w.gen_tok_s)),),
                    (t(str(w.running)),),
                    prose(w.reason),
                )
                for w in sd.excluded
            ],
            level,
            "left-out windows",
            (False, True, True, True, False),
        )
    if sd.engines:
        out += _capped(
            ("engine", "running", "windows", "mean tok/s", "min-max", "lines"),
            [
                (
                    (c(e.engine),),
                    (t(str(e.concurrency)),),
                    (t(str(e.samples)),),
                    (t(num(e.mean_tok_s)),),
                    (t(f"{num(e.min_tok_s)}-{num(e.max_tok_s)}"),),
                    (c(line_ref(e.file, e.start_line, e.end_line)),),
                )
                for e in sd.engines
            ],
            level,
            "engines",
            (False, True, True, True, False, False),
        )
    if sd.other_segments:
        out += _capped(
            ("other stretch at the plateau", "windows", "mean tok/s"),
            [
                ((t(f"lines {o.start_line}-{o.end_line}"),), (t(str(o.samples)),), (t(num(o.mean_tok_s)),))
                for o in sd.other_segments
            ],
            level,
            "other stretches",
            (False, True, True),
        )
    return out


def _trend_rows(rows: list[tuple[str, Inline | str]], sd: Any) -> None:
    """The trend and stationarity rows of a decode section."""
    if sd.trend is not None:
        tr = sd.trend
        rows.append(
            (
                "Trend",
                f"{tr.direction}: {num(tr.first_fit_tok_s)} -> {num(tr.last_fit_tok_s)} tok/s "
                f"({num(tr.change_pct)} %, {num(tr.slope_tok_s_per_min)} tok/s per minute)",
            )
        )
    if sd.stationary is not None:
        st = (
            "yes (within ±15 %)"
            if sd.stationary
            else "no: the rate drifts beyond ±15 % and no part of 3+ windows holds still; the mean is no steady rate"
        )
        if sd.stretch is not None:
            st += (
                f"; the longest stationary part of lines {sd.stretch.start_line}-{sd.stretch.end_line} (which "
                f"drifts {num(sd.stretch.trend_pct)} %, mean {num(sd.stretch.mean_tok_s)} tok/s)"
            )
        rows.append(("Stationary", st))


def _decode_under_load(dl: Any, level: int) -> list[Block]:
    rows: list[tuple[str, Inline | str]] = [
        (
            "Aggregate decode",
            f"mean {num(dl.mean_tok_s)}, median {num(dl.median_tok_s)}, min {num(dl.min_tok_s)}, "
            f"max {num(dl.max_tok_s)} tok/s" + (", prefills included" if dl.prefill_windows else ""),
        ),
        (
            "Running",
            (
                f"steady at {dl.concurrency} ({dl.running_min}-{dl.running_max}, mean {num(dl.mean_running)})"
                if dl.steady
                else f"{dl.running_min}-{dl.running_max}: no steady running count"
            )
            + (f"; up to {dl.max_waiting} waiting" if dl.max_waiting else ""),
        ),
        (
            "Per request",
            f"{num(dl.per_request_tok_s)} tok/s = {num(dl.ms_per_token)} ms/token"
            if dl.per_request_tok_s is not None
            else (t("not applicable: "), *prose(dl.per_request_not_applicable or "")),
        ),
        (
            "Prompt tokens",
            f"{num(dl.prompt_share_pct)} % of the windows' tokens; offered prompt load "
            f"{num(dl.offered_prompt_tok_s)} tok/s (window averages, not a prefill speed)"
            if dl.prompt_share_pct is not None
            else "not given by these lines",
        ),
        (
            "Window",
            (
                t(f"{dl.samples} windows ({dl.prefill_windows} with prefill), {num(dl.duration_s)} s, "),
                c(line_ref(dl.file, dl.start_line, dl.end_line)),
            ),
        ),
        ("Source", (c(dl.source), t(f" ({dl.engine})"))),
    ]
    _trend_rows(rows, dl)
    return [_kv(rows), *_method(dl)]


def _prefill(pf: Any, level: int) -> list[Block]:
    offered = getattr(pf, "measure", "") == "offered_prompt_load"
    rows: list[tuple[str, Inline | str]] = [
        (
            "Offered prompt load" if offered else "Prefill rate",
            f"mean {num(pf.mean_tok_s)}, median {num(pf.median_tok_s)}, min {num(pf.min_tok_s)}, "
            f"max {num(pf.max_tok_s)} tok/s over {pf.samples} samples",
        ),
        ("Source", (c(pf.source),)),
    ]
    if pf.sustained is not None:
        s = pf.sustained
        rows.append(
            (
                "Sustained (inside a burst)",
                f"mean {num(s.mean_tok_s)}, median {num(s.median_tok_s)} tok/s over {s.samples} windows",
            )
        )
    if pf.chunk_size is not None:
        rows.append(("Chunk size", f"{num(pf.chunk_size)} tokens"))
    if pf.chunk_series:
        rows.append(
            (
                "Chunked requests",
                f"{len(pf.chunk_series)}; median change first to last chunk "
                f"{num(pf.chunk_decay_median_pct)} %",
            )
        )
    st = pf.decode_starvation
    if st is not None:
        rows.append(
            (
                "Decode starvation",
                f"{st.count} of {st.prefill_windows} windows with a prefill in progress "
                f"(below {num(st.threshold_pct)} % of {num(st.reference_per_request_tok_s)} "
                f"tok/s per request)",
            )
        )
    elif pf.decode_starvation_not_applicable:
        rows.append(
            ("Decode starvation", (t("not applicable: "), *prose(pf.decode_starvation_not_applicable)))
        )
    out: list[Block] = [_kv(rows), *_method(pf)]
    if pf.chunk_series:
        out += _capped(
            ("request", "chunks", "new tokens", "first chunk tok/s", "last chunk tok/s", "change", "lines"),
            [
                (
                    (t(str(s.request)),),
                    (t(str(s.chunks)),),
                    (t(num(s.new_tokens)),),
                    (t(num(s.tok_s[0])),),
                    (t(num(s.tok_s[-1])),),
                    (t(f"{num(s.decay_pct)} %"),),
                    (c(line_ref(s.file, s.start_line, s.end_line)),),
                )
                for s in pf.chunk_series
            ],
            level,
            "chunked requests",
            (True, True, True, True, True, True, False),
        )
    if st is not None and st.windows:
        if level <= 1:
            out.append(Para((b("Decode starvation: "), *prose(st.method)), "method"))
        out += _capped(
            ("line", "t (s)", "running", "prompt tok/s", "gen tok/s", "per request", "% of reference"),
            [
                (
                    (c(line_ref(w.file, w.line)),),
                    (t(num(w.t_s)),),
                    (t(str(w.running)),),
                    (t(num(w.prompt_tok_s)),),
                    (t(num(w.gen_tok_s)),),
                    (t(num(w.per_request_tok_s)),),
                    (t(num(w.pct_of_reference)),),
                )
                for w in st.windows
            ],
            level,
            "starved windows",
            (False,) + (True,) * 6,
        )
    return out


def _spec(sp: Any, level: int) -> list[Block]:
    rows: list[tuple[str, Inline | str]] = [
        ("Verdict", (b(sp.verdict), t(": "), *prose(sp.verdict_reason))),
        ("Mean acceptance length", num(sp.mean_acceptance_length)),
        ("Acceptance rate", pct(sp.acceptance_rate_pct)),
        ("Drafted / accepted", f"{num(sp.drafted_tok_s)} / {num(sp.accepted_tok_s)} tok/s"),
        ("Wasted drafts", pct(sp.wasted_draft_pct)),
    ]
    if sp.speculative_method or sp.draft_tokens:
        rows.append(
            ("Method, draft tokens", (c(sp.speculative_method or "?"), t(f", k = {sp.draft_tokens or '?'}")))
        )
    rows.append(("Source", (c(sp.source),)))
    out: list[Block] = [_kv(rows), *_method(sp)]
    if sp.per_position_acceptance:
        pp = sp.per_position_acceptance
        out.append(
            Table(
                tuple(["draft position"] + [str(i + 1) for i in range(len(pp))]),
                [((t("accepted"),), *((t(f"{x * 100:.1f} %"),) for x in pp))],
                (False,) + (True,) * len(pp),
            )
        )
    figs = [("whole run", sp.run), ("stable segment", sp.stable_segment)]
    if level <= 1 and sp.stable_segment is not None:
        out += _capped(
            (
                "windows",
                "count",
                "acceptance length",
                "range",
                "acceptance rate",
                "range ",
                "drafted tok/s",
                "accepted tok/s",
            ),
            [
                (
                    (t(name),),
                    (t(str(f.windows)),),
                    (t(num(f.mean_acceptance_length)),),
                    (
                        t(
                            "-".join(num(x) for x in f.acceptance_length_range)
                            if f.acceptance_length_range
                            else ""
                        ),
                    ),
                    (t(pct(f.acceptance_rate_pct)),),
                    (
                        t(
                            "-".join(num(x) for x in f.acceptance_rate_range_pct) + " %"
                            if f.acceptance_rate_range_pct
                            else ""
                        ),
                    ),
                    (t(num(f.drafted_tok_s)),),
                    (t(num(f.accepted_tok_s)),),
                )
                for name, f in figs
                if f is not None
            ],
            level,
            "rows",
            (False,) + (True,) * 7,
        )
    return out


def _kv_pool(kv: Any, level: int) -> list[Block]:
    rows: list[tuple[str, Inline | str]] = [
        ("Pool", f"{num(kv.tokens)} tokens, {num(kv.memory_gib)} GiB"),
        ("Max model len", num(kv.max_model_len)),
        (
            "Max concurrency",
            (
                t(f"{num(kv.max_concurrency)}x"),
                *((t(" ("), *prose(kv.max_concurrency_source), t(")")) if kv.max_concurrency_source else ()),
            ),
        ),
    ]
    if kv.shortfall_pct is not None:
        rows.append(("Shortfall", f"{pct(kv.shortfall_pct)} short of one full-length request"))
    if kv.overcommit_gib is not None:
        rows.append(("Over-commit", f"{num(kv.overcommit_gib)} GiB"))
    if kv.max_running_requests is not None:
        rows.append(("Max running requests", str(kv.max_running_requests)))
    mem = kv.memory
    if mem is not None:
        parts = [
            f"{name} {num(getattr(mem, attr))} GiB"
            for name, attr in (
                ("total", "total_gib"),
                ("weights", "weights_gib"),
                ("non-torch", "non_torch_gib"),
                ("activation peak", "activation_peak_gib"),
                ("CUDA graphs", "cuda_graph_gib"),
                ("KV cache", "kv_cache_gib"),
                ("suggested KV cache", "suggested_kv_cache_gib"),
            )
            if getattr(mem, attr) is not None
        ]
        if mem.gpu_memory_utilization is not None:
            parts.append(f"utilization {num(mem.gpu_memory_utilization)}")
        if parts:
            rows.append(("Memory", "; ".join(parts)))
    out: list[Block] = [_kv(rows)]
    for n in [*kv.notes, *kv.max_running_requests_notes]:
        out.append(Para(prose(n), "note"))
    out += _method(kv)
    out += _capped(
        ("pool", "tokens", "GiB", "blocks", "device", "seen", "ranks", "line"),
        [
            (
                (c(p.pool),),
                (t(num(p.tokens)),),
                (t(num(p.memory_gib)),),
                (t(num(p.gpu_blocks)),),
                (c(p.device or ""),),
                (t(str(p.seen)),),
                (c(ranks_text(p.ranks)),),
                (t(str(p.line)),),
            )
            for p in kv.pools
        ],
        level,
        "pools",
        (False, True, True, True, False, True, False, True),
    )
    return out


def _cold_start(cs: Any, level: int) -> list[Block]:
    rows: list[tuple[str, Inline | str]] = [("Total", seconds(cs.total_s))]
    if cs.start_time or cs.ready_time:
        rows.append(
            (
                "From, to",
                (
                    c(cs.start_time or "?"),
                    t(" (line "),
                    t(str(cs.start_line)),
                    t(") -> "),
                    c(cs.ready_time or "?"),
                    t(" (line "),
                    t(str(cs.ready_line)),
                    t(")"),
                ),
            )
        )
    out: list[Block] = [_kv(rows), *_method(cs)]
    phase_rows: list[tuple[Cell, ...]] = []
    for p in cs.phases:
        spread = ""
        if p.range_s:
            lo, hi = num(p.range_s[0]), num(p.range_s[1])
            spread = f"{lo}-{hi} s over {p.ranks} ranks" if lo != hi else f"same on all {p.ranks} ranks"
        phase_rows.append(
            (
                (t(p.name),),
                (t(num(p.seconds)),),
                (t(p.source),),
                (t(spread),),
                (t(num(p.memory_gib)) if p.memory_gib is not None else t(""),),
                (
                    t(
                        f"{p.start_line}"
                        + (f"-{p.end_line}" if p.end_line and p.end_line != p.start_line else "")
                    ),
                ),
            )
        )
    out += _capped(
        ("phase", "seconds", "from", "ranks", "GiB", "lines"),
        phase_rows,
        min(level, 1),
        "phases",
        (False, True, False, False, True, False),
    )
    return out


def _request_failures(d: Any) -> list[str]:
    """HTTP errors, aborted and failed requests, each only where the log can count it (access or
    request lines present: null otherwise, and then not shown as zero)."""
    out = []
    if d.http_errors is not None:
        by = ", ".join(f"{k}: {v}" for k, v in sorted(d.http_errors_by_status.items()))
        out.append(f"{d.http_errors} HTTP errors" + (f" ({by})" if by else ""))
    if d.aborts is not None:
        out.append(f"{d.aborts} aborted requests")
    if d.request_errors:
        out.append(f"{d.request_errors} failed requests")
    return out


def _from_metrics(d: Any) -> bool:
    return str(getattr(d, "preemptions_source", None) or "").startswith("metrics")


def _preemptions(d: Any) -> Inline | str:
    """The count, and its source when the log could not give it (the server's counter, --metrics)."""
    if not _from_metrics(d):
        return str(d.preemptions)
    return (t(f"{d.preemptions} (source: "), *prose(d.preemptions_source), t(")"))


def _disturbances(d: Any, level: int) -> list[Block]:
    rows: list[tuple[str, Inline | str]] = [
        (
            "OOM",
            f"{d.oom} lines ({d.oom_retried} retried)"
            + (f"; {d.oom_rounds} per rank" if d.oom_rounds else "")
            + (
                f"; asked {num(d.oom_requested_gib)} GiB with {num(d.oom_free_gib)} GiB free (median)"
                if d.oom_requested_gib is not None
                else ""
            ),
        ),
        ("Runtime compiles", str(d.runtime_compiles)),
        (
            "Preemptions",
            _preemptions(d)
            if d.preemptions is not None
            else (t("unknown: "), *prose(d.preemptions_not_applicable or "the log does not count them")),
        ),
        ("Retractions", f"{d.retractions} ({d.retracted_requests} requests)"),
        (
            "Errors",
            str(d.errors)
            + (
                f" (and {d.benign_errors} at a clean shutdown, not counted)"
                if getattr(d, "benign_errors", 0)
                else ""
            ),
        ),
    ]
    failures = _request_failures(d)
    if failures:
        rows.append(("Requests", "; ".join(failures)))
    if d.oom_by_rank:
        rows.append(("OOM by rank", (c(", ".join(f"{k}: {v}" for k, v in d.oom_by_rank.items())),)))
    if d.runtime_compiles_by_rank:
        rows.append(
            ("Compiles by rank", (c(", ".join(f"{k}: {v}" for k, v in d.runtime_compiles_by_rank.items())),))
        )
    out: list[Block] = [_kv(rows)]
    for s in d.overlapping:
        out.append(Para(prose(s), "warn"))
    out += _method(d)
    out += _capped(
        ("t (s)", "time", "what", "count", "ranks", "phase", "in window", "detail", "line"),
        [
            (
                (t(num(e.t_s)),),
                (c(e.time or ""),),
                (t(e.kind),),
                (t(str(e.count)),),
                (c(ranks_text(e.ranks)),),
                (t(e.phase),),
                (t(", ".join(e.overlaps)),),
                (c(clean(e.detail, 160)),),
                (c(line_ref(e.file, e.line)),),
            )
            for e in d.timeline
        ],
        level,
        "timeline entries",
        (True, False, False, True, False, False, False, False, False),
    )
    out += _capped(
        ("line", "phase", "exception", "message"),
        [
            (
                (c(line_ref(e.file, e.line)),),
                (t(e.phase + (" (shutdown)" if e.benign_shutdown else "")),),
                (c(e.exception or ""),),
                (c(clean(e.message, 200)),),
            )
            for e in d.error_list
        ],
        level,
        "errors",
        (False, False, False, False),
    )
    return out


def _bench(bs: Any, level: int) -> list[Block]:
    rows: list[tuple[Cell, ...]] = []
    for r in bs.results:
        rows.append(
            (
                (c(line_ref(r.file, r.line)),),
                (t(r.client or ""),),
                (t(num(r.successful_requests)),),
                (t(num(r.duration_s)),),
                (t(num(r.output_tok_s)),),
                (t(num(r.mean_ttft_ms)),),
                (t(num(r.mean_tpot_ms)),),
                (t(num(getattr(r, "engine_ms_per_token", None))),),
                (t(str(len(r.sanity.violations))),),
            )
        )
    how = getattr(bs, "engine_decode_method", None)
    out: list[Block] = [
        Table(
            (
                "result",
                "client",
                "requests",
                "duration (s)",
                "output tok/s",
                "mean TTFT (ms)",
                "mean TPOT (ms)",
                f"engine ms/token ({how or 'n/a'})",
                "violations",
            ),
            rows,
            (False, False, True, True, True, True, True, True, True),
        )
    ]
    pct_rows: list[tuple[Cell, ...]] = []
    for r in bs.results:
        for what, label in (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2e", "E2E latency")):
            got = getattr(r, "percentiles_ms", {}).get(what)
            if got and any(q in got for q in ("p90", "p95", "p99")):
                pct_rows.append(
                    (
                        (c(line_ref(r.file, r.line)),),
                        (t(label),),
                        *((t(num(got.get(q))),) for q in ("mean", "median", "p90", "p95", "p99", "max")),
                    )
                )
    if pct_rows and level <= 1:
        out.append(
            Table(
                ("result", "latency (ms)", "mean", "median", "P90", "P95", "P99", "max"),
                pct_rows,
                (False, False, True, True, True, True, True, True),
            )
        )
    for r in bs.results:
        for v in r.sanity.violations:
            out.append(Para(prose(f"{line_ref(r.file, r.line)}: {v.message}"), "warn"))
    out += _self_check(bs, level)
    return out + _method(bs)


def _self_check(bs: Any, level: int) -> list[Block]:
    """The client's figures against the engine's log (analyses/selfcheck.py): one row per check made."""
    rows: list[tuple[Cell, ...]] = []
    notes: list[Block] = []
    for r in bs.results:
        sc = getattr(r, "self_check", None)
        if sc is None:
            continue
        for ck in sc.checks:
            rows.append(
                (
                    (c(line_ref(r.file, r.line)),),
                    (t(ck.name.replace("_", " ")),),
                    (t(num(ck.client)),),
                    (t(num(ck.server)),),
                    (t(ck.unit),),
                    (t("ok" if ck.ok else f"points to {ck.points_to}"),),
                )
            )
            if not ck.ok:
                notes.append(Para(prose(f"{line_ref(r.file, r.line)}: {ck.message}"), "warn"))
        if level <= 1:
            for name, why in sc.not_applicable.items():
                notes.append(Para(prose(f"Self-check {name.replace('_', ' ')}: not made ({why})."), "method"))
    if not rows:
        return notes
    return [
        Table(
            ("result", "self-check", "client", "server", "unit", "verdict"),
            rows,
            (False, False, True, True, False, False),
        ),
        *notes,
    ]


def _stalls(st: Any, level: int) -> list[Block]:
    rows: list[tuple[Cell, ...]] = []
    for s in st.spans:
        times = f"{s.start_time} -> {s.end_time}" if s.start_time and s.end_time else f"{num(s.start_t_s)} s"
        rows.append(
            (
                (t(s.kind),),
                (c(s.engine),),
                (c(line_ref(s.file, s.start_line, s.end_line)),),
                (t(times),),
                (t(num(s.duration_s)),),
                prose(s.detail),
            )
        )
    out: list[Block] = [
        Table(
            ("kind", "engine", "lines", "time", "seconds", "what"),
            rows,
            (False, False, False, False, True, False),
        )
    ]
    return out + _method(st)


def _ranks(rk: Any, level: int) -> list[Block]:
    rows: list[tuple[Cell, ...]] = []
    for x in rk.ranks:
        rows.append(
            (
                (c(x.rank),),
                (t(str(x.windows)),),
                (t(f"{num(x.mean_running)} (max {x.max_running})"),),
                (t("n/a" if x.mean_waiting is None else f"{num(x.mean_waiting)} (max {x.max_waiting})"),),
                (t(num(x.mean_gen_tok_s)),),
                (t(num(x.per_request_tok_s)),),
                (t(pct(x.running_share_pct)),),
                (t(pct(x.waiting_share_pct)),),
            )
        )
    out: list[Block] = [
        Table(
            (
                "rank",
                "lines",
                "running",
                "waiting",
                "gen tok/s",
                "per request",
                "share of running",
                "share of waiting",
            ),
            rows,
            (False, True, True, True, True, True, True, True),
        )
    ]
    for im in rk.imbalances:
        out.append(Para(prose(f"{im.kind}: {im.detail}."), "warn"))
    return out + _method(rk)


def _metrics(m: Any, level: int) -> list[Block]:
    from logscope.render.metrics_doc import metrics_blocks  # it imports this module

    return metrics_blocks(m, level)


def _requests(r: Any, level: int) -> list[Block]:
    from logscope.render.requests_doc import requests_blocks  # it imports this module

    return requests_blocks(r, level)


def _slo(s: Any, level: int) -> list[Block]:
    from logscope.render.metrics_doc import slo_blocks

    return slo_blocks(s, level)


def _effective_config(rep: Report, level: int) -> list[Block]:
    """The values the engine ran with: a compact table (name, value, origin, line)."""
    ec = getattr(rep, "effective_config", None)
    if not ec:
        return []
    out: list[Block] = [Heading(2, (t("Effective config"),), "effective-config")]
    rows: list[tuple[Cell, ...]] = [
        ((c(name),), (c(str(v.value)),), (t(v.origin),), (t(str(v.line)),)) for name, v in ec.items()
    ]
    out += _capped(
        ("setting", "value", "origin", "line"), rows, level, "settings", (False, False, False, True)
    )
    out.append(
        Para(
            prose(
                "Origin: set by the user (the args line), default (not set; the engine's value), engine "
                "(the engine changed what it was given) or unknown (printed with every other argument)."
            ),
            "method",
        )
    )
    return out


def _kv_saturation(rep: Report, level: int) -> list[Block]:
    """KV saturation episodes (logscope.analyses.kvsat): shown only when there was one."""
    from logscope.analyses.kvsat import METHOD

    eps = getattr(rep, "kv_saturation", None)
    if not eps:
        return []
    rows: list[tuple[Cell, ...]] = []
    notes = []
    for e in eps:
        end = f"{e.end_time or 'unknown'}{' (log ends)' if e.until_end else ''}"
        running = "unknown" if e.running_start is None else f"{e.running_start} -> {e.running_end}"
        note = "; ".join(
            x
            for x in (
                "stayed full after the running count halved, nothing waiting" if e.outlasts_traffic else "",
                ""
                if e.admitted_before_count is None
                else f"{e.admitted_before_count} requests admitted just before",
            )
            if x
        )
        notes.append(note)
        rows.append(
            (
                (c(e.engine),),
                (c(line_ref(e.file, e.start_line, e.end_line)),),
                (t(e.start_time or "unknown"),),
                (t(end),),
                (t(str(e.windows)),),
                (t(num(e.max_usage_pct)),),
                (t(running),),
                (t("unknown" if e.max_waiting is None else str(e.max_waiting)),),
                prose(note),
            )
        )
    header: tuple[str, ...] = (
        "engine",
        "lines",
        "from",
        "to",
        "windows",
        "max KV %",
        "running",
        "max waiting",
        "note",
    )
    numeric: tuple[bool, ...] = (False, False, False, False, True, True, False, True, False)
    if not any(notes):
        rows, header, numeric = [r[:-1] for r in rows], header[:-1], numeric[:-1]
    out: list[Block] = [Heading(2, (t("KV saturation"),), "kv-saturation")]
    out += _capped(header, rows, level, "episodes", numeric)
    out.append(Para(prose(METHOD), "method"))
    return out


def _preempted(rep: Report, level: int) -> list[Block]:
    """The requests preemption lines name (logscope.analyses.preempted): shown only when there is one."""
    prs = getattr(rep, "preempted_requests", None)
    if not prs:
        return []
    rows: list[tuple[Cell, ...]] = [
        (
            (c(p.request_id),),
            (c(line_ref(p.file, p.line)),),
            (t("unknown" if p.window_line is None else line_ref(p.file, p.window_line)),),
            (t(p.mode or "unknown"),),
            (t(num(p.cumulative) if p.cumulative is not None else "unknown"),),
        )
        for p in prs
    ]
    out: list[Block] = [Heading(2, (t("Preempted requests"),), "preempted-requests")]
    out += _capped(
        ("request", "line", "stats window", "mode", "preemptions so far"),
        rows,
        level,
        "requests",
        (False, False, False, False, True),
    )
    out.append(
        Para(
            prose(
                "From vLLM V0's 'Sequence group ... is preempted' lines, which it prints for the 1st, 51st, "
                "101st ... preemption only; the stats window is the next stats line of the file."
            ),
            "method",
        )
    )
    return out


def _segments(rep: Report, level: int) -> list[Block]:
    """Decode rate before and after each disturbance burst (logscope.analyses.aftermath), when there is one."""
    from logscope.analyses.aftermath import METHOD

    segs = getattr(rep, "disturbance_segments", None)
    if not segs:
        return []

    def side(x: Any) -> str:
        return (
            "unknown"
            if x is None
            else (
                f"{num(x.median_tok_s)} tok/s, {num(x.median_per_request_tok_s)} per "
                f"request ({x.windows} windows)"
            )
        )

    rows: list[tuple[Cell, ...]] = [
        (
            (c(line_ref(g.file, g.start_line, g.end_line)),),
            (t(g.start_time or "unknown"),),
            (t(f"{', '.join(g.kinds)} x{g.count}"),),
            (t(side(g.before)),),
            (t(side(g.after)),),
            (t("unknown" if g.after_over_before is None else num(g.after_over_before)),),
            (t("unknown" if g.recovered is None else ("yes" if g.recovered else "no")),),
        )
        for g in segs
    ]
    out: list[Block] = [Heading(2, (t("Before and after disturbances"),), "disturbance-segments")]
    out += _capped(
        ("lines", "time", "what", "before", "after", "after/before per request", "recovered"),
        rows,
        level,
        "bursts",
        (False, False, False, False, False, True, False),
    )
    out.append(Para(prose(METHOD), "method"))
    return out


SECTION_BUILDERS = {
    "stable_decode": _stable_decode,
    "decode_under_load": _decode_under_load,
    "prefill": _prefill,
    "spec_decode": _spec,
    "kv_pool": _kv_pool,
    "cold_start": _cold_start,
    "disturbances": _disturbances,
    "requests": _requests,
    "bench": _bench,
    "stalls": _stalls,
    "ranks": _ranks,
    "metrics": _metrics,
    "slo": _slo,
}


def title_of(rep: Report) -> str:
    names = [f.rsplit("/", 1)[-1] for f in rep.files]
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"logscope report: {shown or 'run'}"


def report_doc(
    rep: Report,
    level: int = 0,
    *,
    figures: Sequence[str] = (),
    max_findings: int | None = None,
    skipped_figures: dict[str, str] | None = None,
    summarised: str | None = None,
    findings: list[dict[str, Any]] | None = None,
) -> list[Block]:
    """The report as blocks at ``level`` (0 = everything). ``figures`` names the drawn plots (HTML);
    ``summarised`` says why a level above 0 was chosen (shown at the top); ``findings`` is
    ``sorted_findings(rep.findings)`` when the caller has it already."""
    token = _ONE_FILE.set(len(rep.files) == 1)
    try:
        fs = findings if findings is not None else sorted_findings(rep.findings)
        return _report_doc(rep, level, figures, max_findings, skipped_figures, summarised, fs)
    finally:
        _ONE_FILE.reset(token)


def _report_doc(
    rep: Report,
    level: int,
    figures: Sequence[str],
    max_findings: int | None,
    skipped_figures: dict[str, str] | None,
    summarised: str | None,
    fs: list[dict[str, Any]],
) -> list[Block]:
    level = max(0, min(level, LEVELS - 1))
    out: list[Block] = [Heading(1, (t(title_of(rep)),), "top")]
    files = [c(f) for f in rep.files[:20]]
    meta: list[Span] = [t("Files: ")]
    for i, f in enumerate(files):
        meta += [t(", ") if i else t(""), f]
    if len(rep.files) > 20:
        meta.append(t(f" and {len(rep.files) - 20} more"))
    meta.append(t(f". logscope {rep.logscope_version}."))
    out.append(Para(tuple(s for s in meta if s.text), "meta"))
    for note in getattr(rep, "notes", None) or []:  # what the reader met (a cut gzip, undecodable bytes)
        out.append(Para((b("Input note: "), *prose(note)), "warn"))
    if level and summarised:
        out.append(
            Para(
                prose(
                    f"Summarised (detail level {level} of {LEVELS - 1}) {summarised}; the full report is "
                    f"{JSON_HINT} or `--format html`."
                ),
                "note",
            )
        )
    out.append(Heading(2, (t("Summary"),), "summary"))
    out.append(Table(("", ""), summary_rows(rep, fs), key_value=True))
    out += lifetimes_blocks(rep, fs)  # several server lifetimes in the input: which one, and a table

    out.append(Heading(2, (t(f"Findings ({len(fs)})"),), "findings"))
    if not fs:
        out.append(Para((t("No findings."),)))
    elif level >= 4:
        shown = fs if max_findings is None else fs[:max_findings]
        out.append(
            Table(
                ("severity", "code", "finding", "count"),
                [
                    (
                        (t(fd["severity"]),),
                        (c(fd["code"]),),
                        prose(str(fd["title"])),
                        (t(num(fd.get("count"))),),
                    )
                    for fd in shown
                ],
                (False, False, False, True),
            )
        )
        if len(shown) < len(fs):
            out.append(
                Para(prose(f"Showing {len(shown)} of {len(fs)} findings; all are in {JSON_HINT}."), "note")
            )
    else:
        for fd in fs:
            out.append(finding_blocks(fd, level))
    if level >= 3:
        return out

    drawn = set(figures)
    for section, title in SECTION_TITLES.items():
        res = rep.section(section)
        if section == "decode_under_load" and rep.stable_decode is not None:
            continue  # in the JSON report; the text shows it when there is no stable decode segment
        if res is None and section in OPTIONAL_SECTIONS and section != "decode_under_load":
            continue  # only shown when the input holds it (client output given with --bench)
        if res is not None and section in SHOWN_WHEN and not SHOWN_WHEN[section](res):
            continue
        out.append(Heading(2, (t(title),), section.replace("_", "-")))
        names = tuple(n for n in SECTION_FIGURES.get(section, ()) if n in drawn)
        if names:
            out.append(FigureRef(names))
        if res is None:
            out.append(Para(_na(rep, section), "na"))
            continue
        out += SECTION_BUILDERS[section](res, level)
    out += _kv_saturation(rep, level)
    out += _preempted(rep, level)
    out += _segments(rep, level)
    out += _effective_config(rep, level)
    if skipped_figures:
        out.append(Heading(2, (t("Figures not drawn"),), "figures-not-drawn"))
        out.append(Table(("figure", "why"), [((t(k),), prose(v)) for k, v in skipped_figures.items()]))
    cov = rep.coverage
    out.append(Heading(2, (t("Coverage"),), "coverage"))
    out.append(
        _kv(
            [
                ("Lines", num(cov.lines)),
                ("Events", num(cov.events)),
                ("Not understood", num(cov.unparsed)),
                (
                    "Look like a known kind",
                    (t(num(cov.unparsed_candidates)), t(" (see "), c("logscope coverage"), t(")")),
                ),
            ]
        )
    )
    return out
