"""Per-rank load and throughput: each vLLM engine (``Engine 000:``, ``Engine 001:``) or SGLang DP group
(``[... DP2 TP0]`` decode lines) on its own, where the other sections sum or pool them.

Method:

1. One series per engine or DP group (``analyses.series``): its periodic lines' running and waiting
   counts and generation rate. Per rank: windows, mean and peak running and waiting, mean
   generation rate, mean rate per running request, and its share of all ranks' running and waiting
   requests over the matched moments.
2. Moments: each line of the rank with the most lines, matched with the nearest line of every other
   rank within half the logging interval (5 s when the interval is unknown); a moment lacking a rank
   is dropped. Each rank's share of running and waiting requests is taken over these moments.
3. Imbalance at a moment, for one rank:

   - ``queue``: it holds ``QUEUE_SHARE`` (50 %) or more of all waiting requests, at least
     ``MIN_QUEUE`` (4), and at least 3 times the median of the other ranks' queues: the router or
     the DP balancer keeps sending it work the others could take.
   - ``slow``: it runs at least as many requests as the others' median but generates less than
     ``SLOW_SHARE`` (50 %) of their median rate: same work, half the output.

   A rank is reported when the imbalance holds in at least half of the moments (and in 3 or more
   when there are 3 or more moments; in every moment of a shorter excerpt).
"""

from __future__ import annotations

import re
import statistics
from typing import Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.base import Evidence, NotApplicable, Result, RunData, median, r
from logscope.analyses.series import Sample, Series, decode_series

QUEUE_SHARE = 0.5
MIN_QUEUE = 4
QUEUE_FACTOR = 3.0
SLOW_SHARE = 0.5
MIN_MOMENTS = 3


class RankLoad(BaseModel):
    """One engine's or DP group's load and throughput."""

    model_config = ConfigDict(extra="forbid")

    rank: str = Field(description='"engine 0", "DP2"')
    windows: int
    mean_running: float
    max_running: int
    mean_waiting: float | None = Field(None, description="null when its lines have no queue field")
    max_waiting: int | None = None
    mean_gen_tok_s: float
    per_request_tok_s: float | None = Field(
        None, description="mean of gen / running over windows with requests running"
    )
    running_share_pct: float | None = Field(
        None, description="its share of all ranks' running requests over the matched moments"
    )
    waiting_share_pct: float | None = Field(
        None, description="its share of all ranks' waiting requests over the matched moments"
    )
    file: str
    first_line: int
    last_line: int


class Imbalance(BaseModel):
    """A rank that held most of the queue, or ran as much as the others but generated far less."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["queue", "slow"]
    rank: str
    moments: int = Field(description="matched moments that show it")
    of_moments: int
    detail: str
    evidence: list[Evidence] = Field(
        default_factory=list, description="the worst moment's lines, this rank's first"
    )


class Ranks(Result):
    """Per-rank load and throughput, and the imbalances found (possibly none)."""

    source: str
    moments: int = Field(description="moments where every rank printed a line (matched by time)")
    ranks: list[RankLoad]
    imbalances: list[Imbalance] = Field(default_factory=list)


def _load(s: Series) -> RankLoad:
    ss = s.samples
    waits = [x.waiting for x in ss if x.waiting is not None]
    per = [x.gen_tok_s / x.running for x in ss if x.running > 0]
    return RankLoad(
        rank=s.label,
        windows=len(ss),
        mean_running=round(statistics.fmean(x.running for x in ss), 2),
        max_running=max(x.running for x in ss),
        mean_waiting=round(statistics.fmean(waits), 2) if waits else None,
        max_waiting=max(waits) if waits else None,
        mean_gen_tok_s=round(statistics.fmean(x.gen_tok_s for x in ss), 2),
        per_request_tok_s=r(statistics.fmean(per), 3) if per else None,
        file=ss[0].file,
        first_line=ss[0].line,
        last_line=ss[-1].last_line,
    )


def _moments(series: list[Series]) -> list[list[Sample]]:
    """Each moment: one sample per series (in the series' order), matched by time."""
    ref = max(series, key=lambda s: len(s.samples))
    ivs = [x for x in (s.interval for s in series) if x is not None]
    tol = max(0.5 * median(ivs), 1.0) if ivs else 5.0
    joined = pl.DataFrame({"i": list(range(len(ref.samples))), "t_s": [x.t_s for x in ref.samples]}).sort(
        "t_s"
    )
    others = [s for s in series if s is not ref]
    for k, s in enumerate(others):
        other = pl.DataFrame({f"j{k}": list(range(len(s.samples))), "t_s": [x.t_s for x in s.samples]}).sort(
            "t_s"
        )
        joined = joined.join_asof(other, on="t_s", strategy="nearest", tolerance=tol)
    joined = joined.drop_nulls().sort("i")
    out: list[list[Sample]] = []
    for row in joined.iter_rows(named=True):
        by_series = {id(ref): ref.samples[row["i"]]}
        for k, o in enumerate(others):
            by_series[id(o)] = o.samples[row[f"j{k}"]]
        out.append([by_series[id(s)] for s in series])
    return out


def _ev(data: RunData, x: Sample) -> Evidence:
    e = data.events[x.seq]
    return Evidence(file=e.file, line=e.line, text=e.raw.split("\n", 1)[0].rstrip()[:500])


def _needed(n_moments: int) -> int:
    if n_moments < MIN_MOMENTS:
        return n_moments
    return max(MIN_MOMENTS, (n_moments + 1) // 2)


def _imbalances(data: RunData, series: list[Series], moments: list[list[Sample]]) -> list[Imbalance]:
    out: list[Imbalance] = []
    if not moments:
        return out
    need = _needed(len(moments))
    for k, s in enumerate(series):
        queue_hits: list[tuple[float, list[Sample]]] = []
        slow_hits: list[tuple[float, list[Sample]]] = []
        for m in moments:
            me, rest = m[k], [x for j, x in enumerate(m) if j != k]
            if me.waiting is not None and all(x.waiting is not None for x in rest):
                total = me.waiting + sum(x.waiting or 0 for x in rest)
                others_q = median([float(x.waiting or 0) for x in rest])
                if (
                    me.waiting >= MIN_QUEUE
                    and me.waiting >= QUEUE_SHARE * total
                    and me.waiting >= QUEUE_FACTOR * others_q
                ):
                    queue_hits.append((me.waiting / total, m))
            others_run = median([float(x.running) for x in rest])
            others_gen = median([x.gen_tok_s for x in rest])
            if (
                me.running > 0
                and me.running >= others_run
                and others_gen > 0
                and me.gen_tok_s < SLOW_SHARE * others_gen
            ):
                slow_hits.append((me.gen_tok_s / others_gen, m))
        if len(queue_hits) >= need and queue_hits:
            share, m = max(queue_hits, key=lambda h: h[0])
            me, rest = m[k], [x for j, x in enumerate(m) if j != k]
            detail = (
                f"{s.label} held {me.waiting} of the {(me.waiting or 0) + sum(x.waiting or 0 for x in rest)} waiting "
                f"requests ({share:.0%}) with {me.running} running, while the other {len(rest)} rank(s) held "
                f"{_spread([x.waiting or 0 for x in rest])} waiting and {_spread([x.running for x in rest])} "
                f"running (line {me.line}); in {len(queue_hits)} of {len(moments)} matched moment(s)"
            )
            out.append(
                Imbalance(
                    kind="queue",
                    rank=s.label,
                    moments=len(queue_hits),
                    of_moments=len(moments),
                    detail=detail,
                    evidence=[_ev(data, me)] + [_ev(data, x) for x in rest[:4]],
                )
            )
        if len(slow_hits) >= need and slow_hits:
            ratio, m = min(slow_hits, key=lambda h: h[0])
            me, rest = m[k], [x for j, x in enumerate(m) if j != k]
            detail = (
                f"{s.label} generated {me.gen_tok_s:g} tok/s with {me.running} running, {ratio:.0%} of the "
                f"other rank(s)' median {median([x.gen_tok_s for x in rest]):g} tok/s with "
                f"{_spread([x.running for x in rest])} running (line {me.line}); in {len(slow_hits)} of "
                f"{len(moments)} matched moment(s)"
            )
            out.append(
                Imbalance(
                    kind="slow",
                    rank=s.label,
                    moments=len(slow_hits),
                    of_moments=len(moments),
                    detail=detail,
                    evidence=[_ev(data, me)] + [_ev(data, x) for x in rest[:4]],
                )
            )
    return out


def _natural(label: str) -> list[int | str]:
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", label)]


def _spread(xs: list[int]) -> str:
    lo, hi = min(xs), max(xs)
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def ranks(data: RunData) -> Ranks | NotApplicable:
    """Per-rank load and throughput (see the module docstring for the method)."""
    series = sorted((s for s in decode_series(data) if s.samples), key=lambda s: _natural(s.label))
    if len(series) < 2:
        what = "no decode-rate lines" if not series else f"one series ({series[0].label})"
        return NotApplicable(
            reason=f"{what}: no per-engine (`Engine 001:`) or per-DP-group (`DP1 TP0`) lines to compare"
        )
    loads = [_load(s) for s in series]
    moments = _moments(series)
    if moments:
        run_tot = [sum(m[k].running for m in moments) for k in range(len(series))]
        all_run = sum(run_tot)
        known = all(x.waiting is not None for m in moments for x in m)
        wait_tot = [sum(m[k].waiting or 0 for m in moments) for k in range(len(series))] if known else []
        all_wait = sum(wait_tot)
        loads = [
            ld.model_copy(
                update={
                    "running_share_pct": round(100 * run_tot[k] / all_run, 1) if all_run else None,
                    "waiting_share_pct": round(100 * wait_tot[k] / all_wait, 1)
                    if known and all_wait
                    else None,
                }
            )
            for k, ld in enumerate(loads)
        ]
    method = (
        f"One series per rank from the {series[0].source} ({len(series)} ranks: "
        f"{', '.join(s.label for s in series)}); per rank the mean and peak running and waiting requests and the "
        f"mean generation rate over its own lines. {len(moments)} moment(s) where every rank printed a line "
        "(matched by time within half the logging interval) give the shares and the imbalance checks: a rank "
        f"holding {QUEUE_SHARE:.0%}+ of the waiting requests (at least {MIN_QUEUE}, and {QUEUE_FACTOR:g}x the "
        f"others' median), or running at least the others' median of requests at under {SLOW_SHARE:.0%} of "
        "their median rate, in half of the moments or more (every moment of an excerpt under "
        f"{MIN_MOMENTS})."
    )
    return Ranks(
        method=method,
        source=series[0].source,
        moments=len(moments),
        ranks=loads,
        imbalances=_imbalances(data, series, moments),
    )


__all__ = ["Imbalance", "RankLoad", "Ranks", "ranks"]
