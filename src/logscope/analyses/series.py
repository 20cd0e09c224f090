"""Decode-rate time series from the engines' periodic lines, one per engine (DP rank), and their sum.

vLLM: the stats line (``Engine 000: Avg prompt throughput ..., Avg generation throughput ...,
Running: N reqs``), one per engine every ``VLLM_LOG_STATS_INTERVAL`` seconds while busy, each an
average over the window since the previous line. SGLang: ``Decode batch`` lines, printed by the
attention-TP rank 0 of each DP group every ``decode_log_interval`` decode steps, each the rate since the
previous one; a ``Prefill batch`` line between two decode lines means the window held a prefill.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import polars as pl

from logscope.analyses.base import RunData, median, typical_interval


@dataclass(frozen=True, slots=True)
class Sample:
    """One window of a decode-rate series."""

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


@dataclass
class Series:
    """One engine's samples in time order."""

    key: str
    label: str
    samples: list[Sample]
    source: str
    window: str

    @property
    def interval(self) -> float | None:
        return typical_interval([s.t_s for s in self.samples])


def vllm_series(data: RunData) -> list[Series]:
    """One series per vLLM engine (``Engine 00k:``), or the aggregated line when that is what was printed."""
    df = data.frame("throughput").filter(pl.col("t_s").is_not_null())
    if df.height == 0:
        return []
    df = df.with_columns(
        pl.when(pl.col("engines_aggregated").is_not_null())
        .then(pl.lit("all"))
        .otherwise(pl.coalesce(pl.col("engine_index"), pl.col("dp_rank"), pl.lit(0)).cast(pl.Utf8))
        .alias("key")
    )
    out: list[Series] = []
    for (key,), g in sorted(df.group_by("key", maintain_order=True), key=lambda kv: str(kv[0][0])):
        g = g.sort("seq")
        samples = [
            Sample(
                seq=row["seq"], file=row["file"], line=row["line"], t_s=row["t_s"], gen_tok_s=row["gen_tok_s"],
                running=row["running"],
                prefill=None if row["prompt_tok_s"] is None else row["prompt_tok_s"] > 0,
                prompt_tok_s=row["prompt_tok_s"], waiting=row["waiting"], kv_usage_pct=row["gpu_kv_cache_pct"],
            )
            for row in g.iter_rows(named=True)
        ]
        label = "all engines (aggregated line)" if key == "all" else f"engine {key}"
        out.append(Series(str(key), label, samples, "vLLM stats lines", "stats window"))
    return out


def _group_key(df: pl.DataFrame) -> pl.DataFrame:
    return df.with_columns(pl.coalesce(pl.col("dp_rank"), pl.lit(0)).cast(pl.Utf8).alias("key"))


def sglang_series(data: RunData) -> list[Series]:
    """One series per SGLang DP group from its ``Decode batch`` lines (the group's lowest TP rank)."""
    dec = data.frame("decode_batch").filter(pl.col("t_s").is_not_null())
    if dec.height == 0:
        return []
    dec = _group_key(dec)
    pre = _group_key(data.frame("prefill_batch"))
    out: list[Series] = []
    for (key,), g in sorted(dec.group_by("key", maintain_order=True), key=lambda kv: str(kv[0][0])):
        ranks = g["tp_rank"].drop_nulls()
        if ranks.len() and ranks.n_unique() > 1:  # keep one rank's copy of each line
            g = g.filter(pl.col("tp_rank").is_null() | (pl.col("tp_rank") == ranks.min()))
        g = g.sort("seq")
        pseq = pre.filter(pl.col("key") == key)["seq"].sort().to_list()
        samples: list[Sample] = []
        prev: int | None = None
        j = 0
        for row in g.iter_rows(named=True):
            # prefill lines between the previous decode line and this one
            had = False
            while j < len(pseq) and pseq[j] < row["seq"]:
                if prev is not None and pseq[j] > prev:
                    had = True
                j += 1
            usage = row["token_usage"]
            samples.append(Sample(
                seq=row["seq"], file=row["file"], line=row["line"], t_s=row["t_s"], gen_tok_s=row["gen_tok_s"],
                # the first line's window reaches back to start-up: it holds any prefill before it
                running=row["running"], prefill=had if prev is not None else j > 0, waiting=row["queue"],
                kv_usage_pct=None if usage is None else usage * 100, window_known=prev is not None,
            ))
            prev = row["seq"]
        label = f"DP{key}" if dec["key"].n_unique() > 1 or key != "0" else "TP0"
        out.append(Series(str(key), label, samples, "SGLang Decode batch lines", "decode-log window"))
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
        other = pl.DataFrame({f"j{k}": list(range(len(s.samples))), "t_s": [x.t_s for x in s.samples]}).sort("t_s")
        joined = joined.join_asof(other, on="t_s", strategy="nearest", tolerance=tol)
    joined = joined.drop_nulls().sort("i")
    out: list[Sample] = []
    for row in joined.iter_rows(named=True):
        parts = [ref.samples[row["i"]]] + [o.samples[row[f"j{k}"]] for k, o in enumerate(others)]
        pf = [p.prefill for p in parts]
        prompt = [p.prompt_tok_s for p in parts]
        first = parts[0]
        out.append(replace(
            first,
            line=min(p.line for p in parts),
            line_end=max(p.last_line for p in parts),
            gen_tok_s=sum(p.gen_tok_s for p in parts),
            running=sum(p.running for p in parts),
            prefill=True if any(x is True for x in pf) else (None if any(x is None for x in pf) else False),
            prompt_tok_s=None if any(x is None for x in prompt) else sum(x for x in prompt if x is not None),
            waiting=None if any(p.waiting is None for p in parts) else sum(p.waiting or 0 for p in parts),
            window_known=all(p.window_known for p in parts),
        ))
    names = ", ".join(s.label for s in series)
    return Series("sum", f"sum of {len(series)} engines ({names})", out, series[0].source, series[0].window)
