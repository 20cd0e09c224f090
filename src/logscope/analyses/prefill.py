"""Prefill throughput, SGLang per-request chunk series, and decode starvation.

- vLLM: the stats line's ``Avg prompt throughput`` over the windows that had prefill (prompt > 0),
  and over the *sustained* ones (both neighbouring windows also prefilling, no idle gap), which are
  free of the partial windows at a burst's start and end. Each is vLLM's average over its whole
  window: the *offered prompt load* (prompt tokens admitted per second), not a prefill speed, and
  it is reported as such (``measure``). Windows holding fewer than ``MIN_PROMPT_TOKENS`` prompt
  tokens in all give no rate.
- SGLang: ``input throughput (token/s)`` per ``Prefill batch`` line. A long prompt is prefilled in
  chunks of ``chunked_prefill_size`` tokens: consecutive lines with one new sequence and a full
  chunk, ended by the request's shorter last chunk (or by ``#running-req`` growing, when the prompt
  ended on a chunk boundary). Each request's chunk rates, first to last, show attention cost growing
  with the context already in the cache.
- Decode starvation: windows where requests are running and a prefill is in progress but the decode
  rate per running request falls below a quarter of the stable rate (a long prefill took the whole
  token budget, e.g. vLLM ``long_prefill_token_threshold=0``).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from logscope.analyses.base import NotApplicable, Result, RunData, gap_threshold, is_gap, mean, median, r
from logscope.analyses.decode import StableDecode, pure_decode_expr
from logscope.analyses.nostats import missing_stats_reason
from logscope.analyses.series import main_series

STARVATION_PCT = 25.0
MIN_PROMPT_TOKENS = 100  # fewer prompt tokens in all the windows: a rate from them says nothing
MIN_BATCH_TOKENS = 256  # an SGLang prefill line of fewer new tokens: its rate measures the lines' spacing


class RateStats(BaseModel):
    model_config = ConfigDict(extra="forbid")

    samples: int
    mean_tok_s: float
    median_tok_s: float
    min_tok_s: float
    max_tok_s: float


class ChunkSeries(BaseModel):
    """One request's prefill chunks (SGLang)."""

    model_config = ConfigDict(extra="forbid")

    request: int = Field(description="1-based order of the chunked request in the run")
    file: str
    start_line: int
    end_line: int
    chunks: int
    new_tokens: int = Field(description="tokens prefilled over the chunks (the prompt, less cached tokens)")
    tok_s: list[float]
    decay_pct: float = Field(description="last chunk's rate vs the first's, in percent (negative: slower)")
    excluded_chunks: list[int] = Field(
        default_factory=list, description="1-based chunks whose rate spans an idle pause"
    )


class StarvedWindow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: str
    line: int
    t_s: float
    running: int
    prompt_tok_s: float | None
    gen_tok_s: float
    per_request_tok_s: float
    pct_of_reference: float


class DecodeStarvation(Result):
    """Windows where running requests got (almost) no decode steps while a prefill ran."""

    reference_per_request_tok_s: float
    threshold_pct: float = STARVATION_PCT
    count: int
    prefill_windows: int = Field(description="windows with running requests and a prefill in progress")
    windows: list[StarvedWindow] = Field(default_factory=list)
    long_prefill_token_threshold: int | None = None
    boundary_lines: list[int] = Field(
        default_factory=list, description="windows in which the last prefill ended"
    )


class Prefill(Result):
    mean_tok_s: float
    median_tok_s: float
    max_tok_s: float
    min_tok_s: float
    samples: int
    source: str
    sustained: RateStats | None = Field(None, description="vLLM: windows inside a prefill burst only")
    chunk_size: int | None = None
    chunk_series: list[ChunkSeries] = Field(default_factory=list)
    chunk_decay_median_pct: float | None = None
    decode_starvation: DecodeStarvation | None = None
    decode_starvation_not_applicable: str | None = None
    measure: str = Field(
        "prefill_speed",
        description='"prefill_speed" (SGLang: each prefill batch\'s own rate) or '
        '"offered_prompt_load" (vLLM: prompt tokens per second averaged '
        "over each stats window, idle time included)",
    )
    # the rates behind mean/median/min/max, in time order (not in the report: ``compare``'s verdicts use them)
    _values: list[float] = PrivateAttr(default_factory=list)

    @property
    def values_tok_s(self) -> list[float]:
        return self._values


def _stats(vals: list[float]) -> RateStats:
    return RateStats(
        samples=len(vals),
        mean_tok_s=round(mean(vals), 2),
        median_tok_s=round(median(vals), 2),
        min_tok_s=min(vals),
        max_tok_s=max(vals),
    )


def _version(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    m = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", text)
    return tuple(int(x) for x in m.groups() if x is not None) if m else None


def _vllm_prefill(data: RunData) -> Prefill | NotApplicable:
    s = main_series(data)
    if s is None or not s.source.startswith("vLLM"):
        return NotApplicable(reason="no vLLM stats lines")
    ss = s.samples
    if all(x.prompt_tok_s is None for x in ss):
        return NotApplicable(
            reason="the stats lines print no prompt throughput (the early V1 `Throughput:` form)"
        )
    pre = [i for i, x in enumerate(ss) if x.prompt_tok_s]
    if not pre:
        return NotApplicable(reason=f"{len(ss)} stats lines, none with prompt throughput above 0")
    iv = s.interval or 10.0
    tokens = sum(ss[i].prompt_tok_s or 0.0 for i in pre) * iv
    if tokens < MIN_PROMPT_TOKENS:
        return NotApplicable(
            reason=f"{len(pre)} stats window(s) with prompt throughput, about {tokens:.0f} prompt "
            f"tokens in all (fewer than {MIN_PROMPT_TOKENS}): too few for a rate"
        )
    sustained = [
        i
        for i in pre
        if 0 < i < len(ss) - 1
        and ss[i - 1].prompt_tok_s
        and ss[i + 1].prompt_tok_s
        and not is_gap(ss[i].t_s - ss[i - 1].t_s, iv)
        and not is_gap(ss[i + 1].t_s - ss[i].t_s, iv)
    ]
    vals = [ss[i].prompt_tok_s or 0.0 for i in pre]
    st = _stats(vals)
    method = (
        f"Offered prompt load, not a prefill speed: prompt throughput of the {len(pre)} {s.label} stats "
        f"windows (~{iv:g} s each) with prompt throughput > 0: mean, median, min and max. Each is vLLM's "
        f"average over its whole window (prompt tokens admitted / window length, idle and decode time "
        f"included), so it measures the prompt tokens offered per second, and a prefill can run far faster"
    )
    sus = None
    if sustained:
        sus = _stats([ss[i].prompt_tok_s or 0.0 for i in sustained])
        method += (
            f"; `sustained` keeps the {len(sustained)} window(s) whose neighbours were also prefilling "
            f"(inside a burst)"
        )
    method += ". vLLM prints no per-chunk lines, so there is no chunk series."
    res = Prefill(
        method=method,
        source=f"vLLM stats lines ({s.label})",
        sustained=sus,
        measure="offered_prompt_load",
        chunk_size=data.settings.int("chunk_size"),
        **st.model_dump(),
    )
    res._values = vals
    return res


IDLE_GAP_S = 10.0


def _chunk_size(data: RunData, pf: pl.DataFrame) -> tuple[int | None, str]:
    c = data.settings.int("chunk_size")
    if c and c > 0:
        return c, "chunked_prefill_size from the configuration"
    single = pf.filter(pl.col("new_seq") == 1)["new_token"].to_list()
    if not single:
        return None, ""
    value, n = Counter(single).most_common(1)[0]
    if n >= 2 and value == max(single):
        return int(value), "the most common and largest #new-token of single-sequence prefill lines"
    return None, ""


def _prefill_rows(data: RunData) -> list[pl.DataFrame]:
    """SGLang prefill lines per DP group (frames in run order), each with ``rate`` (the batch's own rate,
    shifted back one line where the version prints the previous batch's), ``warmup`` (before the ready
    line) and ``idle`` (the rate spans an idle period: SGLang divides by the time since the previous
    prefill line). Made once per run (``RunData.memo``): the prefill section and its chunk series share it."""
    if "prefill_rows" not in data.memo:
        data.memo["prefill_rows"] = _make_prefill_rows(data)
    out: list[pl.DataFrame] = data.memo["prefill_rows"]
    return out


def _make_prefill_rows(data: RunData) -> list[pl.DataFrame]:
    pf = data.frame("prefill_batch").filter(pl.col("t_s").is_not_null())
    if pf.height == 0:
        return []
    pf = pf.with_columns(pl.coalesce(pl.col("dp_rank"), pl.lit(0)).alias("key")).sort("seq")
    ready = data.ready_seq()
    ver = _version(data.engine_version)
    lagged = ver is not None and ver < (0, 5, 11)
    rate, gap = pl.col("input_tok_s"), pl.col("t_s").diff()  # gap: the time since the previous prefill line
    if lagged:  # <= 0.5.10 prints the previous batch's rate: shift it back one line
        rate, gap = rate.shift(-1), gap.shift(-1)
    warmup = pl.lit(False) if ready is None else pl.col("seq") < ready
    out: list[pl.DataFrame] = []
    for (_key,), g in pf.group_by("key", maintain_order=True):
        g = g.sort("seq").with_columns(rate.alias("rate"), gap.alias("gap"), warmup.alias("warmup"))
        gaps = g["gap"]
        typical = median(gaps.filter(gaps > 0).to_list() or [1.0])
        # no earlier prefill line: after the log's own start-up the rate reaches back to it (idle); in a log
        # that begins mid-run the predecessor is outside the file, and the rate is the batch's own
        idle = (
            pl.when(pl.col("gap").is_null())
            .then(pl.lit(ready is not None))
            .otherwise(pl.col("gap") > max(IDLE_GAP_S, 5 * typical))
        )
        out.append(g.with_columns(idle.alias("idle")))
    return out


def _close(rows: dict[str, list[Any]], cur: list[int]) -> list[ChunkSeries]:
    """The chunk series of the lines ``cur`` (indexes into the group's columns ``rows``): two chunks or
    more with a usable rate."""
    if len(cur) < 2:
        return []
    idle, rate = rows["idle"], rows["rate"]
    keep = [i for i in cur if not idle[i] and rate[i] is not None and rate[i] > 0]
    if len(keep) < 2:
        return []
    tok = [float(rate[i]) for i in keep]
    return [
        ChunkSeries(
            request=0,
            file=rows["file"][cur[0]],
            start_line=rows["line"][cur[0]],
            end_line=rows["line"][cur[-1]],
            chunks=len(cur),
            new_tokens=sum(rows["new_token"][i] for i in cur),
            tok_s=tok,
            decay_pct=round((tok[-1] / tok[0] - 1) * 100, 1),
            excluded_chunks=[k + 1 for k, i in enumerate(cur) if i not in keep],
        )
    ]


def chunk_series(data: RunData) -> tuple[list[ChunkSeries], int | None, str]:
    """Per-request chunk rates from SGLang prefill lines: (series, chunk size, note on method)."""
    groups = _prefill_rows(data)
    if not groups:
        return [], None, ""
    chunk, how = _chunk_size(data, data.frame("prefill_batch"))
    if chunk is None:
        return [], None, ""
    out: list[ChunkSeries] = []
    names = ("file", "line", "new_seq", "new_token", "running", "rate", "idle", "warmup")
    for g in groups:
        rows = {name: g[name].to_list() for name in names}
        running, idle, warmup = rows["running"], rows["idle"], rows["warmup"]
        cur: list[int] = []
        for i, new_seq in enumerate(rows["new_seq"]):
            single = new_seq == 1
            grew = (
                cur
                and running[i] is not None
                and running[cur[-1]] is not None
                and running[i] > running[cur[-1]]
            )
            if cur and (not single or grew or idle[i] and len(cur) > 0 and warmup[i]):
                out += _close(rows, cur)
                cur = []
            if not single or warmup[i]:
                continue
            cur.append(i)
            if rows["new_token"][i] < chunk:  # the request's last, shorter chunk
                out += _close(rows, cur)
                cur = []
        out += _close(rows, cur)
    out.sort(key=lambda c: (c.file, c.start_line))
    numbered = [c.model_copy(update={"request": k + 1}) for k, c in enumerate(out)]
    note = (
        f"Chunk series: consecutive Prefill batch lines of one DP group with #new-seq 1 and #new-token = the "
        f"chunk size {chunk} ({how}), ended by the request's shorter last chunk or by #running-req growing "
        f"(the request joined the running batch); decay = last chunk's input throughput / first's - 1. A chunk "
        f"whose line comes after an idle pause (> {IDLE_GAP_S:g} s and 5x the usual spacing since the previous "
        f"prefill line) is left out (`excluded_chunks`): SGLang divides by the time since that line, idle included"
    )
    ver = _version(data.engine_version)
    if ver is not None and ver < (0, 5, 11):
        note += (
            f"; SGLang {data.engine_version} prints the previous batch's rate on each prefill line, so rates "
            f"were shifted back one line"
        )
    return numbered, chunk, note


def _sglang_prefill(data: RunData) -> Prefill | NotApplicable:
    pf = data.frame("prefill_batch")
    if pf.height == 0:
        return NotApplicable(reason="no SGLang Prefill batch lines")
    groups = _prefill_rows(data)
    rows = pl.concat(groups).filter(pl.col("rate") > 0) if groups else pf.clear()
    if not rows.height:
        return NotApplicable(
            reason=f"{pf.height} Prefill batch lines, none with `input throughput (token/s)` "
            "(SGLang prints it from 0.5.9 on, or in PD-disaggregation prefill mode)"
        )
    warm, idle = pl.col("warmup"), pl.col("idle")
    used = rows.filter(~warm & ~idle)
    if not used.height:
        used = rows
    tokens = pl.col("new_token").fill_null(0)
    small = used.filter(tokens < MIN_BATCH_TOKENS)
    if small.height == used.height:
        return NotApplicable(
            reason=f"{used.height} Prefill batch line(s) with a rate, each of fewer than "
            f"{MIN_BATCH_TOKENS} new tokens: SGLang divides a batch's tokens by the time since "
            "the previous prefill line, so such a small batch's rate measures that spacing, not "
            "a prefill speed"
        )
    used = used.filter(tokens >= MIN_BATCH_TOKENS)
    vals = [float(v) for v in used["rate"].to_list()]
    dropped_warm = rows.filter(warm).height
    dropped_idle = rows.filter(idle & ~warm).height
    series, chunk, note = chunk_series(data)
    method = (
        f"Input throughput of {len(vals)} Prefill batch lines (each the rate of one prefill batch on its DP "
        f"group): mean, median, min and max"
    )
    if dropped_warm or dropped_idle:
        method += (
            f", leaving out {dropped_warm} warm-up line(s) before the ready line and {dropped_idle} line(s) "
            f"after an idle pause (their rate counts the idle time)"
        )
    if small.height:
        method += (
            f", and {small.height} line(s) of fewer than {MIN_BATCH_TOKENS} new tokens (too few tokens: their "
            "rate measures the spacing of the lines, not a prefill)"
        )
    method += "."
    if note:
        method += " " + note + "."
    st = _stats(vals)
    decays = [c.decay_pct for c in series]
    res = Prefill(
        method=method,
        source="SGLang Prefill batch lines",
        chunk_size=chunk,
        chunk_series=series,
        chunk_decay_median_pct=r(median(decays), 1) if decays else None,
        **st.model_dump(),
    )
    res._values = vals
    return res


def decode_starvation(
    data: RunData, stable: StableDecode | NotApplicable
) -> DecodeStarvation | NotApplicable:
    s = main_series(data)
    if s is None:
        return NotApplicable(reason="no decode-rate lines")
    f = s.frame
    running, gen, prefill_col = pl.col("running"), pl.col("gen_tok_s"), pl.col("prefill")
    per_request = gen / running
    if isinstance(stable, StableDecode):
        ref = stable.per_request_tok_s
        how = f"the stable segment's per-request rate ({ref:g} tok/s)"
    else:
        clean = f.filter(pure_decode_expr()).select(per_request).to_series().to_list()
        if not clean:
            return NotApplicable(reason="no pure-decode window to take a reference decode rate from")
        ref = median(clean)
        how = f"the median per-request rate of the {len(clean)} pure-decode windows ({ref:.3g} tok/s)"
    # vLLM counts the request being prefilled as running: a starved window needs another one beside it.
    # SGLang's decode line leaves the in-progress chunked request out of #running-req.
    vllm = s.source.startswith("vLLM")
    min_running = 2 if vllm else 1
    iv = s.interval or 10.0
    prefilling = pl.col("window_known") & (running >= min_running) & prefill_col.eq_missing(True)
    # the window in which the last prefill ended: decode started inside it, so its rate mixes both
    # (no request waiting, the next window decode-only, with running requests and no idle gap before it)
    ended = (
        pl.col("waiting").eq_missing(0)
        & prefill_col.shift(-1).eq_missing(False)
        & running.shift(-1).gt(0).fill_null(False)
        & (pl.col("t_s").shift(-1) - pl.col("t_s")).le(gap_threshold(iv)).fill_null(False)
    )
    windows = f.with_columns((ended if vllm else pl.lit(False)).alias("boundary")).filter(
        prefilling.fill_null(False)
    )
    boundary = windows.filter(pl.col("boundary"))
    mixed = windows.filter(~pl.col("boundary"))
    if not mixed.height:
        return NotApplicable(
            reason=f"no window with a prefill in progress and {min_running}+ running requests"
        )
    starved = mixed.filter(per_request < ref * STARVATION_PCT / 100)
    thr = data.settings.int("long_prefill_token_threshold")
    method = (
        f"{s.source} windows ({s.label}) with a prefill in progress and {min_running}+ running requests "
        f"({mixed.height}{'; vLLM counts the request being prefilled as running' if vllm else ''}); "
        f"starved when the generation rate per running request is below "
        f"{STARVATION_PCT:g} % of {how}."
    )
    lines = boundary["line"].to_list()
    if lines:
        method += (
            f" Left out: {len(lines)} boundary window(s) in which the last prefill ended (no request "
            f"waiting, the next window decode-only; line {', '.join(str(x) for x in lines)})."
        )
    if thr is not None:
        method += f" Configured long_prefill_token_threshold = {thr}."
    return DecodeStarvation(
        method=method,
        reference_per_request_tok_s=round(ref, 3),
        count=starved.height,
        prefill_windows=mixed.height,
        boundary_lines=lines,
        long_prefill_token_threshold=thr,
        windows=[
            StarvedWindow(
                file=x["file"],
                line=x["line"],
                t_s=x["t_s"],
                running=x["running"],
                prompt_tok_s=x["prompt_tok_s"],
                gen_tok_s=x["gen_tok_s"],
                per_request_tok_s=round(x["gen_tok_s"] / x["running"], 3),
                pct_of_reference=round(100 * x["gen_tok_s"] / x["running"] / ref, 1),
            )
            for x in starved.iter_rows(named=True)
        ],
    )


def prefill(data: RunData, stable: StableDecode | NotApplicable | None = None) -> Prefill | NotApplicable:
    """Prefill throughput (and chunk series, decode starvation) of the run."""
    if data.frame("prefill_batch").height:
        res = _sglang_prefill(data)
    elif data.frame("throughput").height:
        res = _vllm_prefill(data)
    else:
        return NotApplicable(
            reason="no prefill-rate lines: neither vLLM stats lines nor SGLang Prefill batch "
            "lines" + missing_stats_reason(data)
        )
    if isinstance(res, NotApplicable):
        return res
    if stable is None:
        from logscope.analyses.decode import stable_decode

        stable = stable_decode(data)
    starve = decode_starvation(data, stable)
    if isinstance(starve, NotApplicable):
        return res.model_copy(update={"decode_starvation_not_applicable": starve.reason})
    return res.model_copy(update={"decode_starvation": starve})
