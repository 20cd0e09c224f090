"""KV saturation episodes: spans where the KV cache stayed (nearly) full for several windows.

"KV cache usage stays at 97-100 % for hours and only a restart fixes it" recurs in the trackers;
a maximum or a count of full lines does not say when it began, how long it lasted, whether the log
ends in it, or who came in just before. An **episode** is a run of ``MIN_WINDOWS`` (3) or more
consecutive periodic lines of one engine whose KV usage is ``FULL_PCT`` (95 %) or more:

- vLLM: the stats line's ``GPU KV cache usage`` (``CPU`` on the CPU backend), one line per engine
  (``Engine 00k``) every stats interval while busy;
- SGLang: the ``Decode batch`` line's ``token usage`` (hybrid SWA models: ``full token usage``), of
  the lowest TP rank of each DP group. ``Prefill batch`` lines are not windows (they come per batch,
  not per interval) and neither open nor close an episode.

A window with no usage figure (a line clipped before it) ends the run. Each episode gives its first
and last line and time, its windows, the longest waiting queue over it, the running count at its
start, end and peak, whether the log ends inside it (``until_end``), the requests admitted in the
window before it when the log has request lines (vLLM ``Added request``, SGLang request logging),
and ``outlasts_traffic``: the running count fell to half its peak or less while the usage stayed
high and nothing waited (the cache stayed full after the requests that filled it left; see KV07).
Built on polars frames.
"""

from __future__ import annotations

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.base import NotApplicable, RunData

FULL_PCT = 95.0
MIN_WINDOWS = 3
MAX_ADMITTED = 20  # request ids listed per episode (the count is given in full)
METHOD = (
    f"An episode is {MIN_WINDOWS} or more consecutive periodic lines of one engine with KV usage of "
    f"{FULL_PCT:g} % or more (vLLM stats lines' KV cache usage; SGLang Decode batch lines' token usage or "
    "full token usage, lowest TP rank of each DP group). Waiting is the longest queue over the episode; "
    "admitted requests are those added in the window before its first line (request logging only)."
)


class KvEpisode(BaseModel):
    """One span of consecutive windows with the KV cache at ``FULL_PCT`` or more."""

    model_config = ConfigDict(extra="forbid")

    start_line: int
    end_line: int
    start_time: str | None = Field(None, description="the first window's printed time")
    end_time: str | None = Field(None, description="the last window's printed time")
    windows: int = Field(description="periodic lines in the episode")
    max_waiting: int | None = Field(
        None, description="the longest waiting queue over the episode (null when the lines do not print it)"
    )
    until_end: bool = Field(
        description="the engine's periodic lines end inside the episode (the log ends full)"
    )
    file: str
    engine: str = Field(description='the series: "engine 0", "DP1", "TP0"')
    start_t_s: float | None = None
    end_t_s: float | None = None
    duration_s: float | None = Field(None, description="first to last window")
    max_usage_pct: float
    running_start: int | None = None
    running_end: int | None = None
    running_max: int | None = None
    outlasts_traffic: bool = Field(
        description="the running count fell to half its peak or less while the usage "
        "stayed high and nothing waited"
    )
    admitted_before: list[str] | None = Field(
        None,
        description=f"ids of requests added in the window before the "
        f"episode (first {MAX_ADMITTED}); null without "
        "request lines",
    )
    admitted_before_count: int | None = None


def _tracks(data: RunData) -> pl.DataFrame:
    """Every periodic line with a usage figure: seq, file, line, time, t_s, key, usage_pct, running, waiting."""
    cols = ["seq", "file", "line", "time", "t_s", "key", "usage_pct", "running", "waiting"]
    tp = data.frame("throughput")
    if tp.height:
        df = tp.filter(pl.col("gpu_kv_cache_pct").is_not_null()).with_columns(
            pl.when(pl.col("engines_aggregated").is_not_null())
            .then(pl.lit("all engines"))
            .otherwise(pl.lit("engine ") + pl.coalesce("engine_index", "dp_rank", pl.lit(0)).cast(pl.Utf8))
            .alias("key"),
            pl.col("gpu_kv_cache_pct").alias("usage_pct"),
        )
        return df.select(cols)
    dec = data.frame("decode_batch")
    if not dec.height:
        return pl.DataFrame(
            schema={c: (pl.Utf8 if c in ("file", "time", "key") else pl.Float64) for c in cols}
        )
    dec = dec.filter(pl.col("token_usage").is_not_null()).with_columns(
        pl.coalesce("dp_rank", pl.lit(0)).alias("group")
    )
    low = pl.col("tp_rank").min().over("group")
    dec = dec.filter(pl.col("tp_rank").is_null() | low.is_null() | (pl.col("tp_rank") == low))
    many = dec["group"].n_unique() > 1
    return dec.with_columns(
        (pl.lit("DP") + pl.col("group").cast(pl.Utf8)).alias("key") if many else pl.lit("TP0").alias("key"),
        (pl.col("token_usage") * 100).alias("usage_pct"),
        pl.col("queue").alias("waiting"),
    ).select(cols)


def _admitted(data: RunData, episodes: pl.DataFrame) -> dict[int, list[str]] | None:
    """Per episode (its first seq): ids of requests added between the previous window and its first line."""
    req = data.frame("request")
    if not req.height:
        return None
    phase = "added" if (req["phase"] == "added").any() else "received"
    req = req.filter((pl.col("phase") == phase) & pl.col("request_id").is_not_null()).select(
        "seq", "request_id"
    )
    out: dict[int, list[str]] = {}
    for first, prev in episodes.select("seq_first", "prev_seq").iter_rows():
        lo = -1 if prev is None else prev
        out[first] = req.filter((pl.col("seq") > lo) & (pl.col("seq") < first))["request_id"].to_list()
    return out


def kv_saturation(data: RunData) -> list[KvEpisode] | NotApplicable:
    """The KV saturation episodes of the run, in order (an empty list when there were none)."""
    if "kv_saturation" in data.memo:
        memo: list[KvEpisode] | NotApplicable = data.memo["kv_saturation"]
        return memo
    out = data.memo["kv_saturation"] = _kv_saturation(data)
    return out


def _kv_saturation(data: RunData) -> list[KvEpisode] | NotApplicable:
    df = _tracks(data)
    if not df.height:
        return NotApplicable(
            reason="no periodic line with a KV usage figure (vLLM stats line's KV cache usage, "
            "SGLang Decode batch line's token usage)"
        )
    df = (
        df.sort("seq")
        .with_columns(
            (pl.col("usage_pct") >= FULL_PCT).alias("full"),
            pl.col("seq").shift(1).over("key").alias("prev_seq"),
            (pl.col("seq") == pl.col("seq").max().over("key")).alias("last"),
        )
        .with_columns(
            (pl.col("full") != pl.col("full").shift(1).over("key"))
            .fill_null(True)
            .cum_sum()
            .over("key")
            .alias("run")
        )
    )
    firsts = {
        "seq": "seq_first",
        "prev_seq": "prev_seq",
        "file": "file",
        "line": "start_line",
        "time": "start_time",
        "t_s": "start_t_s",
        "running": "running_start",
    }
    lasts = {
        "line": "end_line",
        "time": "end_time",
        "t_s": "end_t_s",
        "running": "running_end",
        "waiting": "waiting_end",
    }
    runs = (
        df.filter(pl.col("full"))
        .group_by("key", "run", maintain_order=True)
        .agg(
            pl.len().alias("windows"),
            *(pl.col(k).first().alias(v) for k, v in firsts.items()),
            *(pl.col(k).last().alias(v) for k, v in lasts.items()),
            pl.col("waiting").max().alias("max_waiting"),
            pl.col("usage_pct").max().alias("max_usage_pct"),
            pl.col("running").max().alias("running_max"),
            pl.col("last").any().alias("until_end"),
        )
        .filter(pl.col("windows") >= MIN_WINDOWS)
        .sort("seq_first")
    )
    admitted = _admitted(data, runs) if runs.height else None
    out: list[KvEpisode] = []
    for row in runs.iter_rows(named=True):
        t0, t1 = row["start_t_s"], row["end_t_s"]
        rmax, rend = row["running_max"], row["running_end"]
        outlasts = (
            rmax is not None
            and rend is not None
            and rmax >= 2
            and rend * 2 <= rmax
            and row["waiting_end"] == 0
        )
        ids = None if admitted is None else admitted.get(row["seq_first"], [])
        out.append(
            KvEpisode(
                start_line=row["start_line"],
                end_line=row["end_line"],
                start_time=row["start_time"],
                end_time=row["end_time"],
                windows=row["windows"],
                max_waiting=None if row["max_waiting"] is None else int(row["max_waiting"]),
                until_end=bool(row["until_end"]),
                file=row["file"],
                engine=row["key"],
                start_t_s=t0,
                end_t_s=t1,
                duration_s=None if t0 is None or t1 is None else round(t1 - t0, 3),
                max_usage_pct=round(float(row["max_usage_pct"]), 2),
                running_start=_int(row["running_start"]),
                running_end=_int(rend),
                running_max=_int(rmax),
                outlasts_traffic=bool(outlasts),
                admitted_before=None if ids is None else ids[:MAX_ADMITTED],
                admitted_before_count=None if ids is None else len(ids),
            )
        )
    return out


def _int(x: float | int | None) -> int | None:
    return None if x is None else int(x)


__all__ = ["FULL_PCT", "METHOD", "MIN_WINDOWS", "KvEpisode", "kv_saturation"]
