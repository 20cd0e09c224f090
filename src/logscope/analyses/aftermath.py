"""Before and after a disturbance: the decode rate of the plateau before each preemption burst,
retraction or retried OOM, and of the windows after it.

"After a retraction, decode drops from ~429 to 20-38 tok/s and never recovers" recurs in the trackers.
A disturbance is a preemption line (vLLM V0), a stats window with ``Preemptions: N`` (vLLM V1), a
retraction line (SGLang ``KV cache pool is full. Retract requests`` / ``Decode out of memory
happened``) or an OOM the engine retried; those within ``BURST_S`` of each other are one burst (a line
per rank, a run of preemptions). Rates are taken from the run's decode series (``series.main_series``:
the vLLM stats lines, the SGLang Decode batch lines; the engines' sum under DP), windows with requests
running and tokens generated, stalls left out (``stalls.without_stalls``):

- **before**: the last ``PLATEAU_WINDOWS`` (6) such windows that end before the burst, within one
  stretch without an idle gap (vLLM stops logging when idle);
- **after**: every such window after the burst until the next burst or the end of the lifetime.

Each side gives the median aggregate rate and the median rate **per running request** (aggregate /
running): a load that drains after a disturbance lowers the aggregate rate but not the per-request
one, so the comparison is per request. ``recovered`` says whether any window after reached half the
before per-request rate again; null when there are no windows after (the log ends) or none before.
A vLLM log that cannot show its preemptions (V1 without the ``Preemptions:`` field) and shows no other
disturbance gives null with the reason, never an empty list that would read as "none".
"""

from __future__ import annotations

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.base import NotApplicable, RunData, bursts, gap_threshold, median, r
from logscope.analyses.disturbances import _preemptions_unknown
from logscope.analyses.series import main_series
from logscope.analyses.stalls import without_stalls

BURST_S = 30.0
PLATEAU_WINDOWS = 6
COLLAPSE_RATIO = 0.5
METHOD = (
    f"Disturbances (preemption lines, stats windows with Preemptions: N, retraction lines, retried OOMs) "
    f"within {BURST_S:g} s are one burst. Before: the last {PLATEAU_WINDOWS} decode windows (requests running, "
    "tokens generated, stalls left out) of the stretch ending before the burst; after: every such window up "
    "to the next burst or the end of the lifetime. Rates are medians, aggregate and per running request; "
    f"recovered: a window after reached {COLLAPSE_RATIO:.0%} of the before per-request rate."
)


class RateSide(BaseModel):
    """The decode windows on one side of a disturbance."""

    model_config = ConfigDict(extra="forbid")

    windows: int
    start_line: int
    end_line: int
    median_tok_s: float | None
    median_per_request_tok_s: float | None
    median_running: float | None


class DisturbanceSegment(BaseModel):
    """One burst of disturbances with the decode rate before and after it."""

    model_config = ConfigDict(extra="forbid")

    kinds: list[str] = Field(description='"preemption", "retract", "oom"')
    count: int = Field(
        description="disturbance lines (or preempted requests of V1 stats windows) in the burst"
    )
    file: str
    start_line: int
    end_line: int
    start_time: str | None = None
    before: RateSide | None = Field(None, description="null: no decode window before the burst")
    after: RateSide | None = Field(None, description="null: no decode window after it (the log ends)")
    after_over_before: float | None = Field(None, description="after / before, per running request")
    recovered: bool | None = Field(
        None,
        description="a window after reached half the before per-request rate; null when a side is missing",
    )


def _disturbances(data: RunData) -> pl.DataFrame:
    """seq, file, line, time, t_s, kind, n of every disturbance line, in run order."""
    cols = ["seq", "file", "line", "time", "t_s"]
    parts = []
    pre = data.frame("preemption")
    if pre.height:
        parts.append(pre.select(*cols, pl.lit("preemption").alias("kind"), pl.lit(1, pl.Int64).alias("n")))
    tp = data.frame("throughput")
    if tp.height:
        tp = tp.filter(pl.col("preemptions").fill_null(0) > 0)
        parts.append(
            tp.select(
                *cols, pl.lit("preemption").alias("kind"), pl.col("preemptions").cast(pl.Int64).alias("n")
            )
        )
    ret = data.frame("retract")
    if ret.height:
        parts.append(ret.select(*cols, pl.lit("retract").alias("kind"), pl.lit(1, pl.Int64).alias("n")))
    oom = data.frame("oom")
    if oom.height:
        parts.append(
            oom.filter(pl.col("retry")).select(
                *cols, pl.lit("oom").alias("kind"), pl.lit(1, pl.Int64).alias("n")
            )
        )
    if not parts:
        return pl.DataFrame()
    return pl.concat(parts).filter(pl.col("t_s").is_not_null()).sort("seq")


def _side(rows: pl.DataFrame) -> RateSide | None:
    if not rows.height:
        return None
    per = (rows["gen_tok_s"] / rows["running"]).to_list()
    return RateSide(
        windows=rows.height,
        start_line=int(rows["line"][0]),
        end_line=int(rows["line"][-1]),
        median_tok_s=r(median(rows["gen_tok_s"].to_list())),
        median_per_request_tok_s=r(median(per)),
        median_running=r(median([float(x) for x in rows["running"].to_list()]), 1),
    )


def disturbance_segments(data: RunData) -> list[DisturbanceSegment] | NotApplicable:
    """Each disturbance burst with the decode rate before and after it (see the module docstring)."""
    series = main_series(data)
    if series is None:
        return NotApplicable(
            reason="no decode series (vLLM stats lines, SGLang Decode batch lines) to measure "
            "the rate before and after a disturbance"
        )
    dist = _disturbances(data)
    if not dist.height:
        unknown = _preemptions_unknown(data)  # a vLLM V1 log that cannot show its preemptions: not "none"
        if unknown is not None:
            return NotApplicable(reason=f"no retraction or retried OOM line, and {unknown}")
        return []
    series = without_stalls(data, series)
    iv = series.interval or 10.0
    t = pl.col("t_s").cast(pl.Float64)
    win = (
        series.frame.select(
            "seq",
            "line",
            t.alias("t_s"),
            pl.col("gen_tok_s").cast(pl.Float64),
            "running",
            # a new stretch after an idle gap (the engine stopped logging): ``is_gap`` on the spacing
            (pl.int_range(pl.len()) == 0).or_(t.diff() > gap_threshold(iv)).alias("gap"),
        )
        .with_columns(pl.col("gap").cum_sum().alias("stretch"))
        .filter((pl.col("running") > 0) & (pl.col("gen_tok_s") > 0))
    )
    times = dist["t_s"].to_list()
    groups = bursts(times, BURST_S)
    out: list[DisturbanceSegment] = []
    for g, idx in enumerate(groups):
        b = dist[idx[0] : idx[-1] + 1]
        first_seq, last_seq = int(b["seq"][0]), int(b["seq"][-1])
        next_seq = int(dist["seq"][groups[g + 1][0]]) if g + 1 < len(groups) else None
        before = win.filter(pl.col("seq") < first_seq)
        if before.height:
            before = before.filter(pl.col("stretch") == before["stretch"][-1]).tail(PLATEAU_WINDOWS)
        after = win.filter(pl.col("seq") > last_seq)
        if next_seq is not None:
            after = after.filter(pl.col("seq") < next_seq)
        bs, as_ = _side(before), _side(after)
        ratio = recovered = None
        if bs is not None and as_ is not None and bs.median_per_request_tok_s:
            ref = bs.median_per_request_tok_s
            ratio = r((as_.median_per_request_tok_s or 0.0) / ref, 3)
            recovered = bool(((after["gen_tok_s"] / after["running"]) >= COLLAPSE_RATIO * ref).any())
        out.append(
            DisturbanceSegment(
                kinds=sorted(set(b["kind"].to_list())),
                count=int(b["n"].sum()),
                file=str(b["file"][0]),
                start_line=int(b["line"][0]),
                end_line=int(b["line"][-1]),
                start_time=b["time"][0],
                before=bs,
                after=as_,
                after_over_before=ratio,
                recovered=recovered,
            )
        )
    return out


__all__ = ["METHOD", "DisturbanceSegment", "RateSide", "disturbance_segments"]
