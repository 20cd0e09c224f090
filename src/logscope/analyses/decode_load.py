"""Decode under load: the decode rate while requests keep arriving, prefills included.

``stable_decode`` needs windows free of prefill. In the usual benchmark (``vllm bench serve`` with
more prompts than its concurrency) a new request arrives whenever one finishes, so every ~10 s
stats window holds some prefill and no pure-decode window exists. This section gives that run's
decode rate anyway, and says that prefills are in it.

Method (on the run's decode series: one engine's, or the engines' sum under DP):

1. Candidate windows: requests running, something generated, the window's start known; the first
   window of each burst (the first line, or the first after an idle gap) is left out, because its
   window reaches back into the idle time before the load began.
2. The steady running count ``L`` of a burst is the highest running count that at least
   ``MIN_SAMPLES`` of its candidate windows reach; the plateau is the candidate windows with
   running >= 80 % of ``L`` (ramp-up and drain windows fall below it). The burst with the most
   plateau windows is taken.
3. The plateau is *steady* when no window runs more than 25 % above ``L``. When it is not (running
   swings, e.g. preemptions under a tight KV pool, or requests that all finish together), the
   burst's candidate windows are all used, the aggregate rate is still given, and the per-request
   rate is null with its reason: the running count printed at a window's end is then not that of
   the window. A short run with no burst of ``MIN_SAMPLES`` windows after its first gets the busy
   windows of its biggest burst, the first included (``partial_windows``): a lower bound, said so.
4. Mean, median, min and max of the generation throughput over the windows; per request = the sum
   of the rates / the sum of the running counts; ms/token = 1000 / per request. The share of the
   windows' tokens that were prompt tokens is the prompt rates' sum over the prompt and generation
   rates' sum (every window has the same length). Stationarity as in ``stable_decode``.
"""

from __future__ import annotations

from pydantic import Field

from logscope.analyses.base import NotApplicable, Result, RunData, is_gap, mean, median, r
from logscope.analyses.decode import (
    MIN_SAMPLES,
    SegmentBrief,
    Trend,
    _trend,
    change_pct,
    is_stationary,
    stalled_text,
    stationarity_text,
    stationary_run,
)
from logscope.analyses.series import Sample, Series, main_series

PLATEAU_FRACTION = 0.8  # plateau windows run at least this share of the steady running count
STEADY_ABOVE = 1.25  # a window above this multiple of the steady count makes the plateau unsteady
MIN_TOKENS = 100  # fewer generated tokens than this in the windows: no rate


class DecodeUnderLoad(Result):
    """The run's decode rate with prefills in its windows (see the module docstring)."""

    source: str
    engine: str = Field(description='whose windows: "engine 0", "sum of 2 engines (...)"')
    window_s: float | None = Field(None, description="the logging interval (median spacing of the lines)")
    concurrency: int = Field(
        description="the steady running count (or the median running count when not steady)"
    )
    steady: bool = Field(description="the running count held within 80-125 % of the steady count")
    running_min: int
    running_max: int
    mean_running: float
    samples: int
    duration_s: float
    mean_tok_s: float
    median_tok_s: float
    min_tok_s: float
    max_tok_s: float
    per_request_tok_s: float | None = Field(None, description="sum of the rates / sum of the running counts")
    ms_per_token: float | None = Field(None, description="1000 / per_request_tok_s")
    per_request_not_applicable: str | None = None
    prompt_share_pct: float | None = Field(
        None, description="share of the windows' tokens that were prompt tokens"
    )
    offered_prompt_tok_s: float | None = Field(
        None,
        description="mean of vLLM's window-averaged prompt throughput: the offered prompt load, not a prefill speed",
    )
    prefill_windows: int = Field(description="windows that held a prefill")
    max_waiting: int | None = None
    trend: Trend | None = None
    trend_pct: float | None = None
    stationary: bool | None = None
    stretch: SegmentBrief | None = Field(
        None, description="all the plateau's windows, when a stationary part was taken"
    )
    partial_windows: int = Field(
        0, description="windows used that reach back into idle time (the rate is then a lower bound)"
    )
    file: str
    start_line: int
    end_line: int
    start_t_s: float
    end_t_s: float
    lines: list[int] = Field(default_factory=list, description="the windows' lines, in time order")
    values_tok_s: list[float] = Field(
        default_factory=list, description="the windows' rates used, in time order"
    )


def _bursts(ss: list[Sample], interval: float) -> list[list[int]]:
    """Busy windows (indexes into ``ss``) per burst of load; a burst's first window comes first even
    when idle (``_pick`` leaves it out)."""
    out: list[list[int]] = []
    for i, s in enumerate(ss):
        if i == 0 or is_gap(s.t_s - ss[i - 1].t_s, interval) or ss[i - 1].running == 0:
            out.append([i])  # the burst's first window reaches back into the idle time before it
        elif s.running > 0 and s.gen_tok_s > 0 and s.window_known:
            out[-1].append(i)
    return out


def _level(ss: list[Sample], idx: list[int]) -> int:
    """The highest running count that ``MIN_SAMPLES`` windows reach."""
    runs = sorted((ss[i].running for i in idx), reverse=True)
    return runs[min(MIN_SAMPLES, len(runs)) - 1]


def _busy(s: Sample) -> bool:
    return s.running > 0 and s.gen_tok_s > 0 and s.window_known


def _pick(ss: list[Sample], interval: float) -> tuple[list[int], int, bool, int] | None:
    """(windows, steady running count, steady, partly idle windows among them): the burst with the most
    plateau windows; without 3 full windows in any burst, the burst with the most busy windows, its
    first (partly idle) window included."""
    best: tuple[tuple[int, int, float], list[int], int, bool, int] | None = None
    for burst in _bursts(ss, interval):
        cand = burst[1:]
        if len(cand) >= MIN_SAMPLES:
            level = _level(ss, cand)
            plateau = [i for i in cand if ss[i].running >= PLATEAU_FRACTION * level]
            steady = len(plateau) >= MIN_SAMPLES and all(
                ss[i].running <= STEADY_ABOVE * level for i in plateau
            )
            used, partial, tier = (plateau, 0, 2) if steady else (cand, 0, 1)
        else:
            used = [i for i in burst if _busy(ss[i])]
            if not used:
                continue
            steady, tier = False, 0
            partial = 1 if used[0] == burst[0] else 0
        if not steady:
            level = int(median([float(ss[i].running) for i in used]))
        key = (tier, len(used), -ss[used[0]].t_s)
        if best is None or key > best[0]:
            best = (key, used, level, steady, partial)
    return None if best is None else best[1:]


def _why_not(s: Series) -> str:
    busy = [x for x in s.samples if x.running > 0 and x.gen_tok_s > 0]
    if not busy:
        return f"{len(s.samples)} {s.source} of {s.label}, none with running requests and generated tokens"
    return (
        f"{len(s.samples)} {s.source} of {s.label}, {len(busy)} with running requests: no burst of load with "
        f"{MIN_SAMPLES}+ windows after its first (the first window of a burst reaches back into idle time)"
    )


def decode_under_load(data: RunData) -> DecodeUnderLoad | NotApplicable:
    """The decode rate at the steady running count, prefills included (see the module docstring)."""
    from logscope.analyses.stalls import without_stalls

    whole_series = main_series(data)
    if whole_series is None:
        return NotApplicable(
            reason="no decode-rate lines: neither vLLM stats lines nor SGLang `Decode batch` lines"
        )
    s = without_stalls(data, whole_series)  # a stall or a deadlock is no decode rate
    stalled = len(whole_series.samples) - len(s.samples)
    ss = s.samples
    interval = s.interval or 10.0
    picked = _pick(ss, interval)
    if picked is None:
        return NotApplicable(reason=_why_not(s) + stalled_text(stalled))
    idx, level, steady, partial = picked
    whole: SegmentBrief | None = None
    if is_stationary(change_pct([ss[i] for i in idx])) is False:
        run = stationary_run([ss[i] for i in idx])
        if run is not None:
            whole = SegmentBrief(
                samples=len(idx),
                start_line=ss[idx[0]].line,
                end_line=ss[idx[-1]].last_line,
                mean_tok_s=round(mean([ss[i].gen_tok_s for i in idx]), 2),
                trend_pct=change_pct([ss[i] for i in idx]),
            )
            idx = idx[run[0] : run[1]]
    used = [ss[i] for i in idx]
    vals = [x.gen_tok_s for x in used]
    tokens = sum(vals) * interval
    if tokens < MIN_TOKENS:
        return NotApplicable(
            reason=f"{len(used)} windows under load generated about {tokens:.0f} tokens "
            f"(fewer than {MIN_TOKENS}): too few for a rate"
        )
    mu = mean(vals)
    runs = [x.running for x in used]
    per = mu / mean([float(x) for x in runs]) if steady else None
    per_na = None
    if partial or len(used) < MIN_SAMPLES:
        per_na = (
            f"only {len(used)} window(s) of load, {partial} of them reaching back into idle time: no steady "
            "running count to divide by"
        )
    elif not steady:
        per_na = (
            f"the running count swung from {min(runs)} to {max(runs)} between windows: the count printed at a "
            "window's end is not the window's, so a per-request rate would be a guess"
        )
    prompts = [x.prompt_tok_s for x in used]
    share = offered = None
    if all(p is not None for p in prompts):
        ptot = sum(p or 0.0 for p in prompts)
        share = r(100 * ptot / (ptot + sum(vals)), 1) if ptot + sum(vals) > 0 else None
        offered = r(ptot / len(prompts), 2)
    waits = [x.waiting for x in used if x.waiting is not None]
    trend = _trend(used)
    tp = None if trend is None else trend.change_pct
    first, last = used[0], used[-1]
    lead = interval
    k = ss.index(first)
    if k > 0 and not is_gap(first.t_s - ss[k - 1].t_s, interval):
        lead = first.t_s - ss[k - 1].t_s
    win = f"{s.window}s of ~{interval:g} s"
    pf = sum(1 for x in used if x.prefill)
    if steady:
        how = (
            f"the {len(used)} {win} at running >= {PLATEAU_FRACTION:.0%} of the steady running count {level} "
            f"(the highest count {MIN_SAMPLES}+ windows reach)"
        )
    elif per_na is not None and len(used) < MIN_SAMPLES:
        how = (
            f"the only {len(used)} busy {win} of the load (fewer than {MIN_SAMPLES}; running "
            f"{min(runs)}-{max(runs)})"
            + (
                ": the first reaches back into the idle time before the load, so the rate is a lower bound"
                if partial
                else ""
            )
        )
    else:
        how = (
            f"all {len(used)} busy {win} of the burst (running {min(runs)}-{max(runs)}: no steady running count, "
            f"so no per-request rate)"
        )
    held = (
        f"{pf} of the {len(used)} windows also held prefill (requests kept arriving), so this is the rate "
        "decode achieved beside them, not a pure-decode rate"
        if pf
        else f"none of the {len(used)} windows held prefill, but they are no stable plateau either"
    )
    method = (
        f"Decode under load, prefills included: {held}. "
        f"From {s.source} ({s.label}): {how}, lines {first.line}-{last.last_line}"
        + ("" if partial else ", leaving out the first window of each burst (it reaches back into idle time)")
        + ". Mean, median, min and max of the generation "
        "throughput"
    )
    if per is not None:
        method += "; per request = the rates' sum / the running counts' sum; ms/token = 1000 / per request"
    if share is not None:
        method += (
            "; prompt share = prompt tokens / (prompt + generated tokens) of these windows, from vLLM's "
            "window averages (the offered prompt load, not a prefill speed)"
        )
    elif s.source.startswith("SGLang"):
        method += "; SGLang's decode lines do not give a window's prompt tokens, so there is no prompt share"
    method += ". " + stationarity_text(tp, whole) + stalled_text(stalled)
    return DecodeUnderLoad(
        method=method,
        source=s.source,
        engine=s.label,
        window_s=r(s.interval, 3),
        concurrency=level,
        steady=steady,
        running_min=min(runs),
        running_max=max(runs),
        mean_running=round(mean([float(x) for x in runs]), 2),
        samples=len(used),
        duration_s=round(last.t_s - first.t_s + lead, 3),
        mean_tok_s=round(mu, 2),
        median_tok_s=round(median(vals), 2),
        min_tok_s=min(vals),
        max_tok_s=max(vals),
        per_request_tok_s=None if per is None else round(per, 3),
        ms_per_token=None if per is None else round(1000 / per, 2),
        per_request_not_applicable=per_na,
        prompt_share_pct=share,
        offered_prompt_tok_s=offered,
        prefill_windows=pf,
        max_waiting=max(waits) if waits else None,
        trend=trend,
        trend_pct=tp,
        stationary=is_stationary(tp),
        stretch=whole,
        partial_windows=partial,
        file=first.file,
        start_line=first.line,
        end_line=last.last_line,
        start_t_s=first.t_s,
        end_t_s=last.t_s,
        lines=[x.line for x in used],
        values_tok_s=vals,
    )
