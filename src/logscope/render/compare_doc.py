"""What a comparison of two runs says, as document blocks (``render.doc``).

Level 0: the side-by-side table, the degradation ratios with their numbers, the configuration
differences, what was not applicable, and each section's method; level 1 drops the methods; level 2
keeps the table, the ratios and the differences.
"""

from __future__ import annotations

from typing import Any

from logscope.render.content import SECTION_TITLES, num
from logscope.render.doc import Block, Cell, FigureRef, Heading, Para, Table, b, c, prose, t

COMPARE_FIGURE_SECTIONS = ("compare_decode", "compare_prefill", "compare_spec", "compare_cold_start")


def _value(v: Any) -> Cell:
    if v is None:
        return (t("n/a"),)
    if isinstance(v, bool | int | float):
        return (t(num(v)),)
    return (c(v),)


def _ratio(metric: str, a: Any, bv: Any) -> str:
    """BASE / OTHER where a ratio means something (rates, sizes, times; not percentages or counts of events)."""
    if isinstance(a, bool) or isinstance(bv, bool) or "%" in metric or "decay" in metric:
        return ""
    if metric in ("OOMs", "runtime compiles", "errors", "preemptions"):
        return ""
    if isinstance(a, int | float) and isinstance(bv, int | float) and bv > 0 and a > 0:
        return f"{a / bv:.2f}x"
    return ""


def compare_doc(
    cmp: Any, level: int = 0, *, figures: tuple[str, ...] = (), summarised: str | None = None
) -> list[Block]:
    """``cmp`` is ``logscope.analyses.compare.Comparison``."""
    base, other = cmp.base, cmp.other
    out: list[Block] = [
        Heading(1, (t("logscope comparison: "), c(base.label), t(" vs "), c(other.label)), "top")
    ]
    for role, info in (("BASE", base), ("OTHER", other)):
        eng = " ".join(x for x in (info.engine or "unknown engine", info.engine_version or "") if x)
        spans = [b(f"{role}: "), c(info.label), t(", "), c(eng), t(", files ")]
        for i, f in enumerate(info.files[:10]):
            spans += [t(", ") if i else t(""), c(f)]
        out.append(Para(tuple(s for s in spans if s.text), "meta"))
    if level and summarised:
        out.append(Para(prose(f"Summarised {summarised}; the full comparison is `--format json`."), "note"))
    if cmp.warning:
        out.append(Para(prose(cmp.warning), "warn"))

    if getattr(cmp, "verdicts", None) is not None:
        out += verdict_blocks(cmp.verdicts, level)

    deg = cmp.degradation
    out.append(Heading(2, (t("Decode degradation"),), "degradation"))
    if deg.not_applicable:
        out.append(Para((t("not applicable: "), *prose(deg.not_applicable)), "na"))
    else:
        rows: list[tuple[Cell, ...]] = []
        for key, name in (
            ("ratio_mean", "by mean"),
            ("ratio_median", "by median"),
            ("ratio_peak", "by peak"),
            ("ratio_base_peak_over_other_mean", "BASE peak / OTHER mean (mixed methods)"),
            ("context_ratio", "context OTHER / BASE"),
        ):
            v = getattr(deg, key, None)
            if v is None:
                continue
            rows.append(((b(name),), (t(f"{v:.2f}x"),), prose(deg.labels.get(key, ""))))
        out.append(Table(("ratio", "value", "from"), rows, (False, True, False)))
        how = {
            "stable_decode": "stable decode (pure-decode windows) in both runs",
            "decode_under_load": "decode under load (prefills in the windows) in both runs, because "
            "not both have a stable decode segment",
        }.get(str(getattr(deg, "method", "")), "")
        out.append(
            Para(
                prose(
                    f"{deg.metric}: how many times slower OTHER decodes"
                    + (f"; method: {how}" if how else "")
                    + ". Quote the mean or median ratio; the mixed ratio is shown because figures are often "
                    "quoted that way."
                ),
                "note",
            )
        )
        if deg.per_request:
            pr = deg.per_request
            out.append(
                Table(
                    ("per request", "tok/s", "ms/token", "at the peak: tok/s", "ms/token"),
                    [
                        (
                            (b(role),),
                            (t(num(pr[k].get("tok_s"))),),
                            (t(num(pr[k].get("ms_per_token"))),),
                            (t(num(pr[k].get("peak_tok_s"))),),
                            (t(num(pr[k].get("ms_per_token_at_peak"))),),
                        )
                        for role, k in (("BASE", "base"), ("OTHER", "other"))
                        if k in pr
                    ],
                    (False, True, True, True, True),
                )
            )
    if "compare_decode" in figures:
        out.append(FigureRef(("compare_decode",)))

    out.append(Heading(2, (t("Side by side"),), "side-by-side"))
    out.append(
        Table(
            ("metric", "BASE", "OTHER", "BASE / OTHER"),
            [
                ((t(r.metric),), _value(r.base), _value(r.other), (t(_ratio(r.metric, r.base, r.other)),))
                for r in cmp.summary
            ],
            (False, True, True, True),
        )
    )
    rest = tuple(f for f in COMPARE_FIGURE_SECTIONS[1:] if f in figures)
    if rest:
        out.append(FigureRef(rest))

    out.append(Heading(2, (t(f"Configuration differences ({len(cmp.config_differences)})"),), "differences"))
    if cmp.config_differences:
        out.append(
            Table(
                ("setting", "BASE", "OTHER"),
                [((t(d.label),), _value(d.base), _value(d.other)) for d in cmp.config_differences],
            )
        )
    else:
        out.append(Para((t("None found in the logged configuration."),)))
    if cmp.not_applicable:
        out.append(Heading(2, (t("Not applicable"),), "not-applicable"))
        out.append(
            Table(
                ("section", "run", "why"),
                [
                    ((t(SECTION_TITLES.get(s, s)),), (t(role.upper()),), prose(why))
                    for s, d in cmp.not_applicable.items()
                    for role, why in d.items()
                ],
            )
        )
    if level == 0:
        out.append(Heading(2, (t("Methods"),), "methods"))
        for s, title in SECTION_TITLES.items():
            sec = cmp.sections.get(s) or {}
            m = next(
                (v.get("method") for v in (sec.get("base"), sec.get("other")) if isinstance(v, dict)), None
            )
            if m:
                out.append(Para((b(f"{title}: "), *prose(str(m))), "method"))
    return out


_CHANGE_SPLIT = ". The change itself: "


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:+.1f} %"


def verdict_blocks(v: Any, level: int = 0) -> list[Block]:
    """The verdicts (``analyses.compare_verdicts.Verdicts``): the overall one, a line per metric, why the
    undecided ones are undecided, the load of each side and (level 0) the method."""
    runs = (
        ""
        if v.runs_base == v.runs_other == 1
        else f", {v.runs_base} run(s) BASE vs {v.runs_other} OTHER, the runs are the samples"
    )
    out: list[Block] = [Heading(2, (t(f"Verdict: {v.verdict}"),), "verdicts")]
    out.append(
        Para(
            prose(
                f"{v.reason}. Threshold {v.threshold_pct:g} % (OTHER worse than BASE by more than it "
                f"fails), {v.level:.0%} confidence intervals{runs}."
            ),
            "warn" if v.verdict == "FAIL" else "p",
        )
    )
    rows: list[tuple[Cell, ...]] = []
    for m in v.metrics:
        ci = "n/a" if m.ci_low_pct is None else f"{m.ci_low_pct:+.1f} .. {m.ci_high_pct:+.1f} %"
        rows.append(
            (
                (t(m.label),),
                (t(num(m.base)),),
                (t(num(m.other)),),
                (t(_pct(m.change_pct)),),
                (t(ci),),
                (b(m.verdict),),
                (t(m.method),),
            )
        )
    if rows:
        out.append(
            Table(
                ("metric", "BASE", "OTHER", "change", "interval", "verdict", "samples"),
                rows,
                (False, True, True, True, True, False, False),
            )
        )
        dec = next((m for m in v.metrics if m.metric == "decode_tok_s"), None)
        if dec is not None and level == 0:
            out.append(Para(prose(f"Decode samples: {dec.source}."), "note"))
    # why the undecided ones are undecided, each distinct reason once, with the metrics it holds for
    why: dict[str, list[str]] = {}
    for m in v.metrics:
        if m.verdict == "PASS":
            continue
        head = m.reason.split(_CHANGE_SPLIT)[0] if _CHANGE_SPLIT in m.reason else None
        if head is None and m.ci_low_pct is not None:
            continue  # decided by the interval alone: the table's numbers say it
        why.setdefault(head or m.reason, []).append(m.metric)
    for reason, names in why.items():
        out.append(Para((b(f"{', '.join(names)}: "), *prose(reason)), "note"))
    load = v.equal_load
    if load is not None:
        shown = " / ".join(f"{x:g}" for x in load.base), " / ".join(f"{x:g}" for x in load.other)
        out.append(
            Para(
                prose(
                    f"Load: BASE {shown[0]}, OTHER {shown[1]} ({load.source}): "
                    + ("equal." if load.matched else "not equal, so no verdict compares them.")
                ),
                "note",
            )
        )
    if level == 0:
        out.append(Para((b("Verdict method: "), *prose(v.method)), "method"))
    return out
