"""Prefill throughput, SGLang per-request chunk series, and decode starvation.

- vLLM: the stats line's ``Avg prompt throughput`` over the windows that had prefill (prompt > 0),
  and over the *sustained* ones (both neighbouring windows also prefilling, no idle gap), which are
  free of the partial windows at a burst's start and end.
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

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.base import NotApplicable, Result, RunData, is_gap, mean, median, r
from logscope.analyses.decode import StableDecode, pure_decode
from logscope.analyses.series import Sample, Series, decode_series, summed

STARVATION_PCT = 25.0


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


def _stats(vals: list[float]) -> RateStats:
    return RateStats(samples=len(vals), mean_tok_s=round(mean(vals), 2), median_tok_s=round(median(vals), 2),
                     min_tok_s=min(vals), max_tok_s=max(vals))


def _main_series(data: RunData) -> Series | None:
    series = decode_series(data)
    if not series:
        return None
    return summed(series) or series[0]


def _version(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    m = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", text)
    return tuple(int(x) for x in m.groups() if x is not None) if m else None


def _vllm_prefill(data: RunData) -> Prefill | NotApplicable:
    s = _main_series(data)
    if s is None or not s.source.startswith("vLLM"):
        return NotApplicable(reason="no vLLM stats lines")
    ss = s.samples
    if all(x.prompt_tok_s is None for x in ss):
        return NotApplicable(reason="the stats lines print no prompt throughput (the early V1 `Throughput:` form)")
    pre = [i for i, x in enumerate(ss) if x.prompt_tok_s]
    if not pre:
        return NotApplicable(reason=f"{len(ss)} stats lines, none with prompt throughput above 0")
    iv = s.interval or 10.0
    sustained = [
        i for i in pre
        if 0 < i < len(ss) - 1 and ss[i - 1].prompt_tok_s and ss[i + 1].prompt_tok_s
        and not is_gap(ss[i].t_s - ss[i - 1].t_s, iv) and not is_gap(ss[i + 1].t_s - ss[i].t_s, iv)
    ]
    vals = [ss[i].prompt_tok_s or 0.0 for i in pre]
    st = _stats(vals)
    method = (f"Prompt throughput of the {len(pre)} {s.label} stats windows (~{iv:g} s each) with prompt "
              f"throughput > 0: mean, median, min and max. Each window is vLLM's own average over its interval, "
              f"so a window only partly spent prefilling reads low")
    sus = None
    if sustained:
        sus = _stats([ss[i].prompt_tok_s or 0.0 for i in sustained])
        method += (f"; `sustained` keeps the {len(sustained)} window(s) whose neighbours were also prefilling "
                   f"(inside a burst)")
    method += ". vLLM prints no per-chunk lines, so there is no chunk series."
    return Prefill(method=method, source=f"vLLM stats lines ({s.label})", sustained=sus,
                   chunk_size=data.settings.int("chunk_size"), **st.model_dump())


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


def chunk_series(data: RunData) -> tuple[list[ChunkSeries], int | None, str]:
    """Per-request chunk rates from SGLang prefill lines: (series, chunk size, note on method)."""
    pf = data.frame("prefill_batch").filter(pl.col("t_s").is_not_null())
    if pf.height == 0:
        return [], None, ""
    pf = pf.with_columns(pl.coalesce(pl.col("dp_rank"), pl.lit(0)).alias("key")).sort("seq")
    chunk, how = _chunk_size(data, pf)
    if chunk is None:
        return [], None, ""
    ver = _version(data.engine_version)
    lagged = ver is not None and ver < (0, 5, 11)
    out: list[ChunkSeries] = []
    for (_key,), g in pf.group_by("key", maintain_order=True):
        rows = list(g.sort("seq").iter_rows(named=True))
        rates = [row["input_tok_s"] for row in rows]
        if lagged:  # <= 0.5.10 prints the previous batch's rate: shift it back one line
            rates = rates[1:] + [None]
        cur: list[int] = []

        def close(cur: list[int]) -> None:
            vals = [rates[i] for i in cur]
            if len(cur) >= 2 and all(v is not None and v > 0 for v in vals):
                tok = [float(v) for v in vals if v is not None]
                out.append(ChunkSeries(
                    request=0, file=rows[cur[0]]["file"], start_line=rows[cur[0]]["line"],
                    end_line=rows[cur[-1]]["line"], chunks=len(cur),
                    new_tokens=sum(rows[i]["new_token"] for i in cur), tok_s=tok,
                    decay_pct=round((tok[-1] / tok[0] - 1) * 100, 1),
                ))

        for i, row in enumerate(rows):
            single = row["new_seq"] == 1
            if cur and (not single or row["running"] > rows[cur[-1]]["running"]):
                close(cur)
                cur = []
            if not single:
                continue
            cur.append(i)
            if row["new_token"] < chunk:  # the request's last, shorter chunk
                close(cur)
                cur = []
        if cur:
            close(cur)
    out.sort(key=lambda c: (c.file, c.start_line))
    numbered = [c.model_copy(update={"request": k + 1}) for k, c in enumerate(out)]
    note = (f"Chunk series: consecutive Prefill batch lines of one DP group with #new-seq 1 and #new-token = the "
            f"chunk size {chunk} ({how}), ended by the request's shorter last chunk or by #running-req growing; "
            f"decay = last chunk's input throughput / first's - 1")
    if lagged:
        note += (f"; SGLang {data.engine_version} prints the previous batch's rate on each prefill line, so rates "
                 f"were shifted back one line")
    return numbered, chunk, note


def _sglang_prefill(data: RunData) -> Prefill | NotApplicable:
    pf = data.frame("prefill_batch")
    if pf.height == 0:
        return NotApplicable(reason="no SGLang Prefill batch lines")
    vals = [float(v) for v in pf["input_tok_s"].drop_nulls().to_list() if v > 0]
    if not vals:
        return NotApplicable(reason=f"{pf.height} Prefill batch lines, none with `input throughput (token/s)` "
                                    "(SGLang prints it from 0.5.9 on, or in PD-disaggregation prefill mode)")
    series, chunk, note = chunk_series(data)
    method = (f"Input throughput of the {len(vals)} Prefill batch lines that print it (each the rate of one "
              f"prefill batch on its DP group): mean, median, min and max.")
    if note:
        method += " " + note + "."
    st = _stats(vals)
    decays = [c.decay_pct for c in series]
    return Prefill(method=method, source="SGLang Prefill batch lines", chunk_size=chunk, chunk_series=series,
                   chunk_decay_median_pct=r(median(decays), 1) if decays else None, **st.model_dump())


def decode_starvation(data: RunData, stable: StableDecode | NotApplicable) -> DecodeStarvation | NotApplicable:
    s = _main_series(data)
    if s is None:
        return NotApplicable(reason="no decode-rate lines")
    ss = s.samples
    if isinstance(stable, StableDecode):
        ref = stable.per_request_tok_s
        how = f"the stable segment's per-request rate ({ref:g} tok/s)"
    else:
        clean = [x.gen_tok_s / x.running for x in ss if pure_decode(x)]
        if not clean:
            return NotApplicable(reason="no pure-decode window to take a reference decode rate from")
        ref = median(clean)
        how = f"the median per-request rate of the {len(clean)} pure-decode windows ({ref:.3g} tok/s)"
    mixed = [x for x in ss if x.running > 0 and x.prefill is True]
    if not mixed:
        return NotApplicable(reason="no window with running requests and a prefill in progress")
    starved: list[Sample] = [x for x in mixed if x.gen_tok_s / x.running < ref * STARVATION_PCT / 100]
    thr = data.settings.int("long_prefill_token_threshold")
    method = (f"{s.source} windows ({s.label}) with running requests and a prefill in progress "
              f"({len(mixed)}); starved when the generation rate per running request is below "
              f"{STARVATION_PCT:g} % of {how}.")
    if thr is not None:
        method += f" Configured long_prefill_token_threshold = {thr}."
    return DecodeStarvation(
        method=method, reference_per_request_tok_s=round(ref, 3), count=len(starved), prefill_windows=len(mixed),
        long_prefill_token_threshold=thr,
        windows=[StarvedWindow(file=x.file, line=x.line, t_s=x.t_s, running=x.running, prompt_tok_s=x.prompt_tok_s,
                               gen_tok_s=x.gen_tok_s, per_request_tok_s=round(x.gen_tok_s / x.running, 3),
                               pct_of_reference=round(100 * x.gen_tok_s / x.running / ref, 1)) for x in starved],
    )


def prefill(data: RunData, stable: StableDecode | NotApplicable | None = None) -> Prefill | NotApplicable:
    """Prefill throughput (and chunk series, decode starvation) of the run."""
    if data.frame("prefill_batch").height:
        res = _sglang_prefill(data)
    elif data.frame("throughput").height:
        res = _vllm_prefill(data)
    else:
        return NotApplicable(reason="no prefill-rate lines: neither vLLM stats lines nor SGLang Prefill batch lines")
    if isinstance(res, NotApplicable):
        return res
    if stable is None:
        from logscope.analyses.decode import stable_decode

        stable = stable_decode(data)
    starve = decode_starvation(data, stable)
    if isinstance(starve, NotApplicable):
        return res.model_copy(update={"decode_starvation_not_applicable": starve.reason})
    return res.model_copy(update={"decode_starvation": starve})
