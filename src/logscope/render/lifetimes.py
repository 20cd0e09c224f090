"""The lifetimes table of a report whose input holds several server lifetimes (restarts, appended
logs, a folder of runs): which lifetime the sections describe and why, and one row per lifetime."""

from __future__ import annotations

from typing import Any

from logscope.render.doc import Block, Cell, Heading, Para, Table, b, c, prose, t

MAX_ROWS = 30  # a folder of many runs: the first and the analysed ones are shown, the rest counted


def lifetimes_blocks(rep: Any, findings: list[dict[str, Any]]) -> list[Block]:
    """Nothing for an input of one lifetime."""
    items = rep.lifetimes or []
    if len(items) < 2:
        return []
    chosen = rep.analyzed_lifetime
    out: list[Block] = [Heading(2, (t(f"Server lifetimes ({len(items)})"),), "lifetimes")]
    if chosen is not None:
        out.append(
            Para(
                (
                    b(f"The sections describe lifetime {chosen.index}: "),
                    *prose(chosen.reason + "."),
                    t(" Findings of every lifetime are listed, each saying which."),
                ),
                "warn",
            )
        )
    per: dict[int, int] = {}
    for f in findings:
        if f.get("lifetime") is not None:
            per[int(f["lifetime"])] = per.get(int(f["lifetime"]), 0) + 1
    shown = [lt for lt in items if lt.index <= MAX_ROWS or (chosen is not None and lt.index == chosen.index)]
    rows: list[tuple[Cell, ...]] = []
    for lt in shown:
        mark = " (analysed)" if chosen is not None and lt.index == chosen.index else ""
        where = lt.files[0].rsplit("/", 1)[-1] if lt.files else ""
        more = f" +{len(lt.files) - 1} file(s)" if len(lt.files) > 1 else ""
        rows.append(
            (
                (b(f"{lt.index}{mark}"),),
                (c(f"{where}:{lt.start_line}-{lt.end_line}"), t(more)),
                (t(lt.start_time or "n/a"),),
                (t(lt.engine_version or "n/a"),),
                (t("yes" if lt.ready else "no"),),
                (t("yes" if lt.served_traffic else "no"),),
                (t(str(per.get(lt.index, 0))),),
            )
        )
    out.append(
        Table(
            ("lifetime", "lines", "start", "version", "ready", "served traffic", "findings"),
            rows,
            (False, False, False, False, False, False, True),
        )
    )
    if len(shown) < len(items):
        out.append(
            Para(prose(f"{len(items) - len(shown)} more lifetimes in the JSON report (`lifetimes`)."), "note")
        )
    return out
