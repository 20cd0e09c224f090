"""Decode-rate time series from the engines' periodic lines, one per engine (DP rank), and their sum.

vLLM: the stats line (``Engine 000: Avg prompt throughput ..., Avg generation throughput ...,
Running: N reqs``), one per engine every ``VLLM_LOG_STATS_INTERVAL`` seconds while busy, each an
average over the window since the previous line. SGLang: ``Decode batch`` lines, printed by the
attention-TP rank 0 of each DP group every ``decode_log_interval`` decode steps, each the rate since the
previous one; a ``Prefill batch`` line between two decode lines means the window held a prefill.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import polars as pl

from logscope.analyses.base import RunData, median


class Sample(NamedTuple):
    """One window of a decode-rate series (a tuple: a dense log's series makes one per line when its
    rows are asked for, and a tuple is the cheapest row Python builds)."""

    seq: int
    file: str
    line: int
    t_s: float
    gen_tok_s: float
    running: int
    prefill: bool | None  # a prefill happened in the window (None: the line does not say)
    prompt_tok_s: float | None = None
    waiting: int | None = None
    kv_usage_pct: float | None = None
    line_end: int | None = None
    window_known: bool = True  # False for SGLang's first decode line: its window reaches back to start-up

    @property
    def last_line(self) -> int:
        return self.line_end if self.line_end is not None else self.line


# The columns of a series' frame, in ``Sample``'s field order (a row is a ``Sample``).
SAMPLE_SCHEMA: dict[str, pl.DataType] = {
    "seq": pl.Int64(),
    "file": pl.Utf8(),
    "line": pl.Int64(),
    "t_s": pl.Float64(),
    "gen_tok_s": pl.Float64(),
    "running": pl.Int64(),
    "prefill": pl.Boolean(),
    "prompt_tok_s": pl.Float64(),
    "waiting": pl.Int64(),
    "kv_usage_pct": pl.Float64(),
    "line_end": pl.Int64(),
    "window_known": pl.Boolean(),
}


@dataclass
class Series:
    """One engine's windows in time order: ``frame`` holds them as columns (``SAMPLE_SCHEMA``), the
    form the analyses of dense logs work on; ``samples`` is the same windows as ``Sample`` rows, built
    on first use (a dense SGLang log has a window per line: no object per window unless asked)."""

    key: str
    label: str
    frame: pl.DataFrame
    source: str
    window: str

    @classmethod
    def of_samples(cls, key: str, label: str, samples: list[Sample], source: str, window: str) -> Series:
        cols = {name: [getattr(x, name) for x in samples] for name in SAMPLE_SCHEMA}
        out = cls(key, label, pl.DataFrame(cols, schema=SAMPLE_SCHEMA), source, window)
        out.__dict__["samples"] = samples
        return out

    @cached_property
    def samples(self) -> list[Sample]:
        return list(map(Sample, *(_values(self.frame.get_column(name)) for name in SAMPLE_SCHEMA)))

    @cached_property
    def interval(self) -> float | None:
        return typical_interval_of(self.frame.get_column("t_s"))


def _values(col: pl.Series) -> list[Any]:
    """A column as a list; a text column of one value (a series' file) as that one string repeated."""
    if col.dtype == pl.Utf8 and col.len() and col.n_unique() == 1:
        return [col[0]] * col.len()
    return col.to_list()


def typical_interval_of(ts: pl.Series) -> float | None:
    """``typical_interval`` of a column of times: the median positive spacing (the same float: the
    median is taken in Python, as ``statistics.median`` takes it)."""
    d = ts.diff().filter(ts.diff() > 0)
    return median(d.to_list()) if d.len() else None


def _vllm_key() -> pl.Expr:
    return (
        pl.when(pl.col("engines_aggregated").is_not_null())
        .then(pl.lit("all"))
        .otherwise(pl.coalesce(pl.col("engine_index"), pl.col("dp_rank"), pl.lit(0)).cast(pl.Utf8))
        .alias("key")
    )


def _groups(df: pl.DataFrame) -> list[tuple[str, pl.DataFrame]]:
    """(key, rows in run order) of each ``key``, keys in text order."""
    groups = [(str(k[0]), g) for k, g in df.partition_by("key", maintain_order=True, as_dict=True).items()]
    # (partition_by, not group_by: iterating a group_by copied a dense log's frame several times over)
    return [
        (k, g if g["seq"].is_sorted() else g.sort("seq")) for k, g in sorted(groups, key=lambda kg: kg[0])
    ]


def vllm_series(data: RunData) -> list[Series]:
    """One series per vLLM engine (``Engine 00k:``), or the aggregated line when that is what was printed."""
    df = data.frame("throughput").filter(pl.col("t_s").is_not_null())
    if df.height == 0:
        return []
    df = df.with_columns(_vllm_key())
    out: list[Series] = []
    for key, g in _groups(df):
        frame = g.select(
            "seq",
            "file",
            "line",
            "t_s",
            "gen_tok_s",
            "running",
            (pl.col("prompt_tok_s") > 0).alias("prefill"),
            "prompt_tok_s",
            pl.col("waiting"),
            pl.col("gpu_kv_cache_pct").alias("kv_usage_pct"),
            pl.lit(None, pl.Int64).alias("line_end"),
            pl.lit(True).alias("window_known"),
        ).cast(SAMPLE_SCHEMA)  # type: ignore[arg-type]
        label = "all engines (aggregated line)" if key == "all" else f"engine {key}"
        out.append(Series(key, label, frame, "vLLM stats lines", "stats window"))
    return out


def _group_key(df: pl.DataFrame) -> pl.DataFrame:
    return df.with_columns(pl.coalesce(pl.col("dp_rank"), pl.lit(0)).cast(pl.Utf8).alias("key"))


def one_rank(g: pl.DataFrame) -> pl.DataFrame:
    """``g`` with one TP rank's copy of each line (the lowest rank's) when several ranks printed them."""
    ranks = g["tp_rank"].drop_nulls()
    if ranks.len() and ranks.n_unique() > 1:
        return g.filter(pl.col("tp_rank").is_null() | (pl.col("tp_rank") == ranks.min()))
    return g


def sglang_series(data: RunData) -> list[Series]:
    """One series per SGLang DP group from its ``Decode batch`` lines (the group's lowest TP rank).

    A window held a prefill when a ``Prefill batch`` line of its group lies between the previous decode
    line and this one: the count of the group's prefill lines before each decode line grew. The first
    line's window reaches back to start-up: it holds any prefill before it."""
    dec = data.frame("decode_batch").filter(pl.col("t_s").is_not_null())
    if dec.height == 0:
        return []
    dec = _group_key(dec)
    pre = _group_key(data.frame("prefill_batch"))
    many = dec["key"].n_unique() > 1
    out: list[Series] = []
    for key, g in _groups(dec):
        g = one_rank(g)
        pseq = pre.filter(pl.col("key") == key)["seq"].sort()
        before = pseq.search_sorted(g["seq"], side="left").cast(
            pl.Int64
        )  # the group's prefill lines before each
        frame = (
            g.with_columns(before.alias("_before"))
            .select(
                "seq",
                "file",
                "line",
                "t_s",
                "gen_tok_s",
                "running",
                (pl.col("_before") > pl.col("_before").shift(1, fill_value=0)).alias("prefill"),
                pl.lit(None, pl.Float64).alias("prompt_tok_s"),
                pl.col("queue").alias("waiting"),
                (pl.col("token_usage") * 100).alias("kv_usage_pct"),
                pl.lit(None, pl.Int64).alias("line_end"),
                (pl.int_range(pl.len()) > 0).alias("window_known"),
            )
            .cast(SAMPLE_SCHEMA)  # type: ignore[arg-type]
        )
        label = f"DP{key}" if many or key != "0" else "TP0"
        out.append(Series(key, label, frame, "SGLang Decode batch lines", "decode-log window"))
    return out


def decode_series(data: RunData) -> list[Series]:
    """The run's decode series: vLLM stats lines, else SGLang decode lines (built once per run)."""
    if "decode_series" not in data.memo:
        data.memo["decode_series"] = vllm_series(data) or sglang_series(data)
    out: list[Series] = data.memo["decode_series"]
    return out


def main_series(data: RunData) -> Series | None:
    """The engines' sum under DP, else the one engine's series (built once per run)."""
    if "main_series" not in data.memo:
        series = decode_series(data)
        data.memo["main_series"] = (summed(series) or series[0]) if series else None
    out: Series | None = data.memo["main_series"]
    return out


def summed(series: list[Series]) -> Series | None:
    """The engines' sum at common times: each window of the busiest engine matched with the nearest
    window of every other engine within half an interval; windows not seen on every engine are dropped."""
    if len(series) < 2:
        return None
    ref = max(series, key=lambda s: len(s.samples))
    iv = median([x for x in (s.interval for s in series) if x is not None] or [10.0])
    tol = max(0.5 * iv, 1.0)
    base = pl.DataFrame({"i": list(range(len(ref.samples))), "t_s": [s.t_s for s in ref.samples]}).sort("t_s")
    joined = base
    others = [s for s in series if s is not ref]
    for k, s in enumerate(others):
        other = pl.DataFrame({f"j{k}": list(range(len(s.samples))), "t_s": [x.t_s for x in s.samples]}).sort(
            "t_s"
        )
        joined = joined.join_asof(other, on="t_s", strategy="nearest", tolerance=tol)
    joined = joined.drop_nulls().sort("i")
    out: list[Sample] = []
    for row in joined.iter_rows(named=True):
        parts = [ref.samples[row["i"]]] + [o.samples[row[f"j{k}"]] for k, o in enumerate(others)]
        pf = [p.prefill for p in parts]
        prompt = [p.prompt_tok_s for p in parts]
        first = parts[0]
        out.append(
            first._replace(
                line=min(p.line for p in parts),
                line_end=max(p.last_line for p in parts),
                gen_tok_s=sum(p.gen_tok_s for p in parts),
                running=sum(p.running for p in parts),
                prefill=True
                if any(x is True for x in pf)
                else (None if any(x is None for x in pf) else False),
                prompt_tok_s=None
                if any(x is None for x in prompt)
                else sum(x for x in prompt if x is not None),
                waiting=None if any(p.waiting is None for p in parts) else sum(p.waiting or 0 for p in parts),
                window_known=all(p.window_known for p in parts),
            )
        )
    names = ", ".join(s.label for s in series)
    return Series.of_samples(
        "sum", f"sum of {len(series)} engines ({names})", out, series[0].source, series[0].window
    )
