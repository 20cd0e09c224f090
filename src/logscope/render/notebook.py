"""Short displays of a run, a report, a comparison and a store: one line for ``repr`` (a terminal, a
log message), a small HTML fragment for a notebook (``_repr_html_``).

A notebook shows an object's HTML each time it ends a cell; a dataclass's own repr listed every event
(82 KB for a 25 KB log). These say what the object is and its headline numbers, and point to the
full thing (``report.to_json()``, ``run.frame(kind)``, ``store.runs``). The HTML is a fragment (no
page, no style sheet, no script), escaped as the HTML report is (``render.html``), and is kept under
``HTML_BUDGET`` bytes: the report is shown at the most detailed level that fits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from logscope.render.content import LEVELS, num, report_doc, severity_counts, sorted_findings
from logscope.render.doc import Block, Cell, Para, Table, b, c, prose, t
from logscope.render.html import _block

HTML_BUDGET = 16_000  # bytes of HTML a display may take (a notebook cell stays readable)
KINDS_SHOWN = 12  # event kinds listed by a run's display (the most frequent first; the rest counted)
RUNS_SHOWN = 15  # rows of a store's runs table shown


def _fragment(blocks: Sequence[Block]) -> str:
    body = "".join(_block(bl, {}, "svg") for bl in blocks)
    return f'<div class="logscope">{body}</div>'


def _engine_text(engine: str | None, version: str | None) -> str:
    return " ".join(x for x in (engine or "unknown engine", version or "") if x)


def _files_text(files: Sequence[str]) -> str:
    names = [f.rsplit("/", 1)[-1] for f in files]
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


# -- Run --------------------------------------------------------------------------------------------


def _run_version(run: Any) -> str | None:
    return next(
        (str(e.version) for e in run.events if e.kind == "version" and getattr(e, "version", None)), None
    )


def _span(run: Any) -> tuple[str | None, str | None, float | None]:
    """(first printed time, last printed time, seconds between) of the run's timed events."""
    first = last = None
    t_last = None
    for e in run.events:
        if e.t_s is not None and e.time:
            first = first or e.time
            last = e.time
            t_last = e.t_s if t_last is None or e.t_s > t_last else t_last
    return first, last, t_last


def run_repr(run: Any) -> str:
    counts = run.counts()
    known = sum(n for k, n in counts.items() if k != "unparsed")
    return (
        f"<logscope.Run {_engine_text(run.engine, _run_version(run))}: {_files_text(run.files)}; "
        f"{known:,} events of {len([k for k in counts if k != 'unparsed'])} kinds, "
        f"{counts.get('unparsed', 0):,} unparsed; run.frame(kind), run.analyze()>"
    )


def run_html(run: Any) -> str:
    counts = run.counts()
    first, last, dur = _span(run)
    rows: list[tuple[Cell, ...]] = [
        ((b("Engine"),), (c(_engine_text(run.engine, _run_version(run))),)),
        ((b("Files"),), (t(_files_text(run.files)),)),
        ((b("Lines read"),), (t(num(getattr(run.stats, "lines", None) or None)),)),
        ((b("Time"),), (t(f"{first or 'unknown'} to {last or 'unknown'} ({num(dur)} s)"),)),
        (
            (b("Events"),),
            (
                t(
                    f"{num(sum(n for k, n in counts.items() if k != 'unparsed'))} of a known kind, "
                    f"{num(counts.get('unparsed', 0))} lines not understood"
                ),
            ),
        ),
    ]
    kinds = sorted(((k, n) for k, n in counts.items() if k != "unparsed"), key=lambda kn: (-kn[1], kn[0]))
    table = Table(
        ("kind", "events"), [((c(k),), (t(num(n)),)) for k, n in kinds[:KINDS_SHOWN]], (False, True)
    )
    blocks: list[Block] = [Table(("", ""), rows, key_value=True), table]
    if len(kinds) > KINDS_SHOWN:
        blocks.append(Para((t(f"and {len(kinds) - KINDS_SHOWN} more kinds (run.counts())"),), "note"))
    blocks.append(
        Para(
            prose("`run.frame(kind)`: a kind's events as a polars DataFrame; `run.analyze()`: the report."),
            "note",
        )
    )
    return _fragment(blocks)


# -- Report -----------------------------------------------------------------------------------------


def report_repr(rep: Any) -> str:
    fs = sorted_findings(rep.findings)
    sd = rep.stable_decode
    decode = (
        f"decode {num(sd.mean_tok_s)} tok/s mean at {sd.concurrency} running"
        if sd
        else "decode: not applicable"
    )
    codes = ", ".join(dict.fromkeys(str(f["code"]) for f in fs))
    found = f"{len(fs)} findings ({severity_counts(fs)}: {codes})" if fs else "no findings"
    return (
        f"<logscope.Report {_engine_text(rep.engine, rep.engine_version)}: {_files_text(rep.files)}, "
        f"{rep.lines:,} lines; {decode}; {found}; .to_json() for everything>"
    )


def report_html(rep: Any) -> str:
    """The report at the most detailed level (above 1: no full detail tables) that fits ``HTML_BUDGET``."""
    fs = sorted_findings(rep.findings)
    html = ""
    for level in range(2, LEVELS):
        html = _fragment(
            report_doc(rep, level, findings=fs, max_findings=20, summarised="to fit a notebook cell")
        )
        if len(html.encode()) <= HTML_BUDGET:
            break
    return html


# -- Comparison ---------------------------------------------------------------------------------------


def comparison_repr(cmp: Any) -> str:
    deg = cmp.degradation
    if deg.ratio_mean is not None:
        ratio = (
            f"BASE / OTHER stable decode {num(deg.ratio_mean)}x by mean, {num(deg.ratio_median)}x by median, "
            f"{num(deg.ratio_peak)}x by peak"
        )
    else:
        ratio = f"degradation not applicable ({deg.not_applicable or 'no stable decode in one run'})"
    v = getattr(cmp, "verdicts", None)
    verdict = f"; verdict {v.verdict} at {v.threshold_pct:g} %" if v is not None else ""
    return f"<logscope.Comparison {cmp.base.label} vs {cmp.other.label}: {ratio}{verdict}; .to_json() for everything>"


def comparison_html(cmp: Any) -> str:
    from logscope.render.compare_doc import compare_doc

    html = ""
    for level in range(1, LEVELS):
        html = _fragment(compare_doc(cmp, level, summarised="to fit a notebook cell"))
        if len(html.encode()) <= HTML_BUDGET:
            break
    return html


# -- Store --------------------------------------------------------------------------------------------

STORE_COLUMNS = ("name", "engine", "engine_version", "model", "start_time", "decode_mean_tok_s", "findings")


def store_html(store: Any) -> str:
    runs = store._runs
    rows: list[tuple[Cell, ...]] = []
    for r in runs.head(RUNS_SHOWN).to_dicts():
        findings = sum(int(r.get(f"findings_{s}") or 0) for s in ("error", "warning", "info"))
        codes = ", ".join(r.get("finding_codes") or [])
        cells = {
            "name": str(r.get("name") or ""),
            "engine": str(r.get("engine") or "unknown"),
            "engine_version": str(r.get("engine_version") or ""),
            "model": str(r.get("model") or ""),
            "start_time": str(r.get("start_time") or "unknown"),
            "decode_mean_tok_s": num(r.get("decode_mean_tok_s")),
            "findings": f"{findings}" + (f" ({codes})" if codes else ""),
        }
        rows.append(tuple((t(cells[k]),) for k in STORE_COLUMNS))
    numeric = tuple(k == "decode_mean_tok_s" for k in STORE_COLUMNS)
    blocks: list[Block] = [
        Para(
            (
                b("logscope store "),
                c(str(store.path)),
                t(f": {runs.height} runs, {len(store.kinds())} event kinds"),
            ),
            "meta",
        ),
        Table(STORE_COLUMNS, rows, numeric),
    ]
    if runs.height > RUNS_SHOWN:
        blocks.append(Para((t(f"and {runs.height - RUNS_SHOWN} more runs (store.runs)"),), "note"))
    blocks.append(
        Para(
            prose(
                "`store.runs`: the runs table; `store[kind]`: every run's events of a kind "
                "(polars LazyFrames)."
            ),
            "note",
        )
    )
    return _fragment(blocks)
