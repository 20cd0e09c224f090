"""Stalls, hangs and deadlocks: spans of the run where requests were in flight and the engine made no progress.

The periodic lines are the engine's heartbeat: vLLM's stats line (one per engine every
``VLLM_LOG_STATS_INTERVAL``, 10 s by default), SGLang's ``Decode batch`` lines (every 40 decode
steps) and ``Prefill batch`` lines, per DP group. Three shapes of "in flight, no progress":

``stalled``
    3 or more consecutive windows (no idle gap between them) with requests running whose
    generation was near zero: below ``STALL_FRACTION`` (10 %) of the run's sustained peak both in
    aggregate and per running request, with no prefill in the window. The sustained peak is the
    highest median of 3 consecutive busy windows, so one stall cannot set its own yardstick; a
    window that printed exactly 0 tok/s with requests running counts whatever the peak. A slow
    engine (the same low rate all run long) is not a stall. Also stalled (vLLM): ``MIN_HELD_WINDOWS``
    (6) or more consecutive windows in which requests waited and nobody was admitted (prompt
    throughput 0, the running count unchanged, the queue not shorter) while the KV cache was under
    ``HELD_KV_PCT`` (25 %) full and the batch below ``max_num_seqs`` when the log gives it: the
    ``Running: 1, Waiting: 14`` for ten minutes of a stuck scheduler, whatever its rate.
``deadlock``
    windows with ``Running: 0`` and a waiting queue in which nothing was generated or prefilled:
    the scheduler holds requests and runs none. Reported when it holds for 2 or more windows, or
    when the periodic lines stop right after it (vLLM logs a window whose throughputs and the
    previous window's are all zero at DEBUG, so a deadlocked V1 engine prints one such line at
    INFO and then falls silent).
``frozen``
    the periodic lines stop for more than ``MISSING_INTERVALS`` (3) logging intervals past the
    expected next line (and at least ``MIN_SILENCE_S``) while requests were in flight. In flight
    means: the line before the silence shows a waiting queue, or (vLLM) requests running (after a
    busy window vLLM always prints the next one at INFO, so silence after a busy snapshot is the
    engine not reporting), or (SGLang) the first line after the silence is a ``Decode batch`` line
    with no ``Prefill batch`` line in between (the same batch continued). A silence after the
    load ended (``Running: 0, Waiting: 0``) is an idle engine, not a freeze; a silence across a
    change of process id is a restart, not a freeze, and a silence of more than a day is taken for
    lines of different days pasted together. The silence ends at the next periodic line, else at the
    first clean-stop line or the log's last timestamp (an error line first: the engine died, EN01).

Each span carries its time span and evidence lines that lie inside it (the line that opens it,
lines logged during it such as shared-memory broadcast or watchdog warnings, the line that closes
it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.base import Evidence, NotApplicable, Result, RunData, median, r
from logscope.analyses.series import Series, decode_series, one_rank
from logscope.events import Event

STALL_FRACTION = 0.10  # near zero: below this share of the run's sustained peak (aggregate and per request)
MIN_STALL_WINDOWS = 3
MIN_DEADLOCK_WINDOWS = 2
MIN_HELD_WINDOWS = (
    6  # a queue nobody is admitted from, with the KV cache nearly empty: a weaker sign, more windows
)
HELD_KV_PCT = 25.0  # KV usage below which a waiting request surely fits (V1 prefills in chunks)
MISSING_INTERVALS = 3  # a silence longer than this many intervals past the expected next line
MIN_SILENCE_S = 30.0  # and at least this long (SGLang's interval is a second or two)
MAX_SILENCE_S = (
    86400.0  # longer: lines of different days pasted together (an excerpt), not one engine's silence
)
SLACK_S = 1.5  # printed times have one-second resolution
MAX_EVIDENCE = 5

SpanKind = Literal["stalled", "deadlock", "frozen"]

_SHUTDOWN = re.compile(
    r"\[shutdown\]|Shutting down|SIGTERM received|SIGINT received|Gracefully exiting|"
    r"received signal=SIG(?:TERM|INT)|KeyboardInterrupt"
)


class StallSpan(BaseModel):
    """One span with requests in flight and no progress."""

    model_config = ConfigDict(extra="forbid")

    kind: SpanKind
    engine: str = Field(description='the series: "engine 0", "DP2", "TP0"')
    file: str
    start_line: int
    end_line: int
    start_t_s: float
    end_t_s: float
    duration_s: float
    start_time: str | None = Field(None, description="the opening line's printed time")
    end_time: str | None = Field(None, description="the closing line's printed time")
    windows: int = Field(description="periodic lines inside the span (0 for a silence)")
    missing_lines: int | None = Field(
        None, description="periodic lines that should have been printed (silences)"
    )
    running: int | None = Field(None, description="running requests when the span began")
    waiting: int | None = Field(None, description="waiting requests when the span began")
    mean_gen_tok_s: float | None = Field(None, description="mean generation rate of the span's windows")
    resumed: bool = Field(description="the periodic lines came back after the span (else the log ends in it)")
    detail: str = Field(description="what was seen, in words")
    evidence: list[Evidence] = Field(default_factory=list, description="lines inside the span")


class Stalls(Result):
    """Spans where requests were in flight and nothing moved (possibly none)."""

    interval_s: float | None = Field(
        None, description="the logging interval (median spacing of the periodic lines)"
    )
    peak_tok_s: float | None = Field(None, description="the sustained peak generation rate (aggregate)")
    peak_per_request_tok_s: float | None = Field(
        None, description="the sustained peak generation rate per request"
    )
    spans: list[StallSpan] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Beat:
    """One periodic line."""

    seq: int
    file: str
    line: int
    t_s: float
    time: str | None
    running: int
    waiting: int | None
    gen_tok_s: float | None  # None: the line has no rate (an SGLang prefill line)
    prefill: bool | None  # the window held prefill work (None: the line does not say)
    decode_line: bool  # an SGLang Decode batch line or a vLLM stats line
    process: str | None
    prompt_tok_s: float | None = None  # vLLM: the window's prompt throughput (0.0: nothing prefilled)
    kv_usage_pct: float | None = None

    @property
    def busy(self) -> bool:
        return self.running > 0 or (self.waiting or 0) > 0


BEAT_SCHEMA: dict[
    str, pl.DataType
] = {  # a track's columns: ``Beat``'s fields but the texts read off the event
    "seq": pl.Int64(),
    "file": pl.Utf8(),
    "line": pl.Int64(),
    "t_s": pl.Float64(),
    "running": pl.Int64(),
    "waiting": pl.Int64(),
    "gen_tok_s": pl.Float64(),
    "prefill": pl.Boolean(),
    "decode_line": pl.Boolean(),
    "prompt_tok_s": pl.Float64(),
    "kv_usage_pct": pl.Float64(),
}


@dataclass
class _Track:
    """One engine's periodic lines in run order, as columns (``BEAT_SCHEMA``, plus ``i``: the row's
    place). The tests of every window are polars expressions over it; ``Beat`` rows are made only for
    the windows a span holds (``beats``), and for every window of a vLLM track (``all``: one line per
    stats interval, few)."""

    label: str
    df: pl.DataFrame
    interval: float | None
    vllm: bool
    events: Sequence[Event]
    peaks: tuple[float | None, float | None] | None = None  # (aggregate, per request): see ``_peaks``

    def __len__(self) -> int:
        return self.df.height

    def beats(self, idx: Sequence[int]) -> list[Beat]:
        rows = self.df.select(list(BEAT_SCHEMA))[list(idx)] if len(idx) else self.df.clear()
        out = []
        for seq, file, line, t_s, running, waiting, gen, prefill, decode_line, prompt, kv in rows.iter_rows():
            e = self.events[seq]
            out.append(
                Beat(
                    seq,
                    file,
                    line,
                    t_s,
                    e.time,
                    running,
                    waiting,
                    gen,
                    prefill,
                    decode_line,
                    e.process,
                    prompt,
                    kv,
                )
            )
        return out

    def beat(self, i: int) -> Beat | None:
        return self.beats([i])[0] if 0 <= i < self.df.height else None

    def all(self) -> list[Beat]:
        return self.beats(range(self.df.height))

    def contiguous(self, interval: float) -> pl.Expr:
        """Each row against the previous row of the frame it is evaluated on (``_contiguous``)."""
        return (pl.col("t_s") - pl.col("t_s").shift(1)) <= 1.5 * interval + SLACK_S


def _typical(ts: Sequence[float]) -> float | None:
    d = [b - a for a, b in zip(ts, ts[1:], strict=False) if b - a > 0]
    return median(d) if d else None


def _tracks(data: RunData) -> list[_Track]:
    """Each series' periodic lines (built once per run): its decode-rate windows, and under SGLang its
    group's ``Prefill batch`` lines (the group's lowest TP rank), in run order."""
    if "stall_tracks" not in data.memo:
        data.memo["stall_tracks"] = _make_tracks(data)
    out: list[_Track] = data.memo["stall_tracks"]
    return out


def _make_tracks(data: RunData) -> list[_Track]:
    series = decode_series(data)
    if not series:
        return []
    vllm = series[0].source.startswith("vLLM")
    out: list[_Track] = []
    for s in series:
        df = s.frame.with_columns(pl.lit(True).alias("decode_line"))
        if not vllm:  # an SGLang decode window's Beat carries neither (the prefill lines are in the track)
            df = df.with_columns(
                pl.lit(None, pl.Float64).alias("prompt_tok_s"), pl.lit(None, pl.Float64).alias("kv_usage_pct")
            )
            pre = data.frame("prefill_batch").filter(pl.col("t_s").is_not_null())
            if pre.height:
                pre = pre.with_columns(pl.coalesce(pl.col("dp_rank"), pl.lit(0)).cast(pl.Utf8).alias("key"))
                pre = one_rank(pre.filter(pl.col("key") == s.key)).select(
                    "seq",
                    "file",
                    "line",
                    "t_s",
                    pl.col("running").fill_null(0),
                    pl.col("queue").alias("waiting"),
                    pl.lit(None, pl.Float64).alias("gen_tok_s"),
                    pl.lit(True).alias("prefill"),
                    pl.lit(False).alias("decode_line"),
                )
                df = pl.concat(
                    [
                        df.select(list(BEAT_SCHEMA)).cast(BEAT_SCHEMA),  # type: ignore[arg-type]
                        pre.cast({k: v for k, v in BEAT_SCHEMA.items() if k in pre.columns}),
                    ],
                    how="diagonal",
                )
        df = df.select(list(BEAT_SCHEMA)).cast(BEAT_SCHEMA)  # type: ignore[arg-type]
        df = (df if df["seq"].is_sorted() else df.sort("seq")).with_row_index("i")
        out.append(_Track(s.label, df, s.interval, vllm, data.events))
    return out


def _median3(col: str) -> pl.Expr:
    """The median of the value and the next two of its run (null where the run has fewer left): the
    middle one, as ``statistics.median`` gives it."""
    a, b, c = pl.col(col), pl.col(col).shift(-1).over("run"), pl.col(col).shift(-2).over("run")
    mid = pl.max_horizontal(pl.min_horizontal(a, b), pl.min_horizontal(pl.max_horizontal(a, b), c))
    return pl.when(c.is_not_null()).then(mid).alias(col)


def _contiguous(a: Beat, b: Beat, interval: float) -> bool:
    return b.t_s - a.t_s <= 1.5 * interval + SLACK_S


def _silence_limit(interval: float) -> float:
    return max((MISSING_INTERVALS + 1) * interval + SLACK_S, MIN_SILENCE_S)


def _peaks(track: _Track) -> tuple[float | None, float | None]:
    """(aggregate, per request) sustained peak of a track's decode windows with requests running: the
    highest median of 3 consecutive windows of one run (a window with none running, or after an idle
    gap, starts another run). Computed once per track."""
    if track.peaks is None:
        interval = track.interval or 10.0
        d = track.df.filter(pl.col("decode_line") & pl.col("gen_tok_s").is_not_null())
        d = d.with_columns(
            (pl.col("running").shift(1).fill_null(0) <= 0).alias("_after_idle"),
            track.contiguous(interval).fill_null(False).alias("_contiguous"),
        ).filter(pl.col("running") > 0)
        d = d.select(
            (pl.col("_after_idle") | ~pl.col("_contiguous")).cum_sum().alias("run"),
            pl.col("gen_tok_s").alias("agg"),
            (pl.col("gen_tok_s") / pl.col("running")).alias("per"),
        )
        m = d.select(_median3("agg").max(), _median3("per").max())
        track.peaks = (m.item(0, 0), m.item(0, 1))
    return track.peaks


def _near_zero_expr(peak: float | None, peak_per: float | None) -> pl.Expr:
    """``_near_zero`` of each row of a track."""
    gen, running = pl.col("gen_tok_s"), pl.col("running")
    base = pl.col("decode_line") & gen.is_not_null() & (running > 0) & ~pl.col("prefill").fill_null(False)
    if peak is None or peak_per is None:
        return base & (gen == 0)
    return base & ((gen == 0) | ((gen < STALL_FRACTION * peak) & (gen / running < STALL_FRACTION * peak_per)))


def _near_zero(b: Beat, peak: float | None, peak_per: float | None) -> bool:
    if not b.decode_line or b.gen_tok_s is None or b.running <= 0 or b.prefill is True:
        return False
    if b.gen_tok_s == 0:
        return True
    if peak is None or peak_per is None:
        return False
    return b.gen_tok_s < STALL_FRACTION * peak and b.gen_tok_s / b.running < STALL_FRACTION * peak_per


def _deadlocked() -> pl.Expr:
    """A decode window with Running 0 and a queue in which nothing was generated or prefilled."""
    gen = pl.col("gen_tok_s")
    return (
        pl.col("decode_line")
        & (pl.col("running") == 0)
        & (pl.col("waiting").fill_null(0) > 0)
        & (gen.is_null() | (gen == 0))
        & ~pl.col("prefill").fill_null(False)
    )


def _dur(seconds: float) -> str:
    """``43 s``, ``12.5 min``, ``3.2 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _ev(data: RunData, b: Beat) -> Evidence:
    e = data.events[b.seq]
    return Evidence(file=e.file, line=e.line, text=e.raw.split("\n", 1)[0].rstrip()[:500])


def _inside(data: RunData, file: str, seq0: int, seq1: int | None, t0: float, t1: float) -> list[Evidence]:
    """Lines logged during a silence (same file, strictly between its two ends): warnings and
    errors first (shared-memory broadcast waits, watchdogs), then others."""
    events = data.events
    hi = len(events) if seq1 is None else seq1
    found: list[tuple[int, int, Evidence]] = []
    for i in range(seq0 + 1, min(hi, seq0 + 20000)):
        e = events[i]
        if e.file != file or e.t_s is None or not (t0 < e.t_s <= t1):
            continue
        rank = (
            0
            if e.kind in ("warning", "error", "oom") or (e.level or "").upper() in ("WARNING", "ERROR")
            else 1
        )
        found.append(
            (rank, i, Evidence(file=e.file, line=e.line, text=e.raw.split("\n", 1)[0].rstrip()[:500]))
        )
    found.sort(key=lambda x: (x[0], x[1]))
    return [ev for _r, _i, ev in found[:3]]


def _log_end(data: RunData, after: Beat) -> tuple[int | None, float | None, str | None]:
    """Where a silence that no periodic line closes ends: the first clean-stop line after ``after``,
    else the last timestamped line of its file. ``(None, None, None)`` when an error line comes
    first: the engine died (EN01 tells that), it did not hang."""
    events = data.events
    last: tuple[int | None, float | None, str | None] = (None, None, None)
    for i in range(after.seq + 1, len(events)):
        e = events[i]
        if e.file != after.file or e.t_s is None:
            continue
        first = e.raw.split("\n", 1)[0]
        if _SHUTDOWN.search(first) and "Traceback" not in first:
            return i, e.t_s, e.time
        if e.kind == "error":
            return None, None, None
        last = (i, e.t_s, e.time)
    return last


def _span(
    kind: SpanKind,
    track: _Track,
    first: Beat,
    last: Beat,
    end_t: float,
    end_time: str | None,
    windows: list[Beat],
    resumed: bool,
    detail: str,
    evidence: list[Evidence],
    missing: int | None = None,
) -> StallSpan:
    gens = [b.gen_tok_s for b in windows if b.gen_tok_s is not None]
    return StallSpan(
        kind=kind,
        engine=track.label,
        file=first.file,
        start_line=first.line,
        end_line=last.line,
        start_t_s=first.t_s,
        end_t_s=end_t,
        duration_s=round(end_t - first.t_s, 3),
        start_time=first.time,
        end_time=end_time,
        windows=len(windows),
        missing_lines=missing,
        running=first.running,
        waiting=first.waiting,
        mean_gen_tok_s=r(sum(gens) / len(gens)) if gens else None,
        resumed=resumed,
        detail=detail,
        evidence=evidence[:MAX_EVIDENCE],
    )


def _runs(track: _Track, rows: pl.DataFrame, mask: pl.Expr, interval: float, min_len: int) -> list[list[int]]:
    """Track indexes (``i``) of the runs of consecutive ``rows`` that satisfy ``mask``, each next to the
    previous one in time (``_contiguous``), ``min_len`` or longer."""
    d = rows.select("i", mask.alias("_m"), track.contiguous(interval).fill_null(False).alias("_c"))
    d = d.with_columns(
        (pl.col("_m") & ~(pl.col("_m").shift(1).fill_null(False) & pl.col("_c"))).cum_sum().alias("run")
    )
    groups = d.filter(pl.col("_m")).group_by("run", maintain_order=True).agg(pl.col("i"))
    return [ix for ix in groups["i"].to_list() if len(ix) >= min_len]


def _stalled_runs(track: _Track, peak: float | None, peak_per: float | None) -> list[list[int]]:
    """Runs of ``MIN_STALL_WINDOWS`` or more near-zero decode windows in a row (``_near_zero``), each within
    reach of the previous one (``_contiguous``); any other decode window ends a run."""
    decode = track.df.filter(pl.col("decode_line"))
    return _runs(track, decode, _near_zero_expr(peak, peak_per), track.interval or 10.0, MIN_STALL_WINDOWS)


def _held(b: Beat, cap: int | None) -> bool:
    """A vLLM window where requests waited, nothing was prefilled (nobody admitted) and the KV cache was
    nearly empty, with the batch below ``max_num_seqs`` when the log says it."""
    return (
        b.decode_line
        and (b.waiting or 0) > 0
        and b.running > 0
        and b.prompt_tok_s == 0.0
        and b.kv_usage_pct is not None
        and b.kv_usage_pct < HELD_KV_PCT
        and (cap is None or b.running < cap)
    )


def _held_runs(track: _Track, cap: int | None) -> list[list[int]]:
    """Track indexes of the runs of held windows in which the running count stays and the queue does
    not shrink (vLLM: a line per stats interval, so a loop over its rows)."""
    if not track.vllm:
        return []
    interval = track.interval or 10.0
    beats = track.all()
    runs: list[list[int]] = []
    cur: list[int] = []
    for k, b in enumerate(beats):
        if (
            _held(b, cap)
            and cur
            and _contiguous(beats[cur[-1]], b, interval)
            and b.running == beats[cur[0]].running
            and (b.waiting or 0) >= (beats[cur[-1]].waiting or 0)
        ):
            cur.append(k)
            continue
        if len(cur) >= MIN_HELD_WINDOWS:
            runs.append(cur)
        cur = [k] if _held(b, cap) else []
    if len(cur) >= MIN_HELD_WINDOWS:
        runs.append(cur)
    return runs


def _track_spans(data: RunData, track: _Track) -> list[StallSpan]:
    interval = track.interval or 10.0
    limit = _silence_limit(interval)
    n = len(track)
    peak, peak_per = _peaks(track)
    spans: list[StallSpan] = []

    # stalled: near-zero generation with requests running
    stalled_runs = _stalled_runs(track, peak, peak_per)
    for ix in stalled_runs:
        run = track.beats(ix)
        a, z = run[0], run[-1]
        nxt = track.beat(ix[-1] + 1)
        ev = [_ev(data, a)] + [_ev(data, b) for b in run[1:-1][: MAX_EVIDENCE - 2]] + [_ev(data, z)]
        ref = (
            f" (the run's sustained peak: {r(peak)} tok/s, {r(peak_per, 3)} tok/s per request)"
            if peak is not None and peak_per is not None
            else ""
        )
        gens = [b.gen_tok_s or 0.0 for b in run]
        lo, hi = min(b.running for b in run), max(b.running for b in run)
        detail = (
            f"{len(run)} consecutive windows with {lo if lo == hi else f'{lo}-{hi}'} requests running"
            f"{'' if not any((b.waiting or 0) for b in run) else ' and up to ' + str(max(b.waiting or 0 for b in run)) + ' waiting'}"
            f" generated {r(min(gens))}-{r(max(gens))} tok/s and prefilled nothing{ref}"
        )
        spans.append(_span("stalled", track, a, z, z.t_s, z.time, run, nxt is not None, detail, ev))

    # a queue nobody is admitted from while the KV cache is nearly empty (a stall at any rate)
    taken = {k for ix in stalled_runs for k in ix}
    for ix in _held_runs(track, data.settings.int("max_num_seqs")):
        if any(k in taken for k in ix):
            continue
        run = track.beats(ix)
        a, z = run[0], run[-1]
        nxt = track.beat(ix[-1] + 1)
        ev = [_ev(data, a)] + [_ev(data, b) for b in run[1:-1][: MAX_EVIDENCE - 2]] + [_ev(data, z)]
        gens = [b.gen_tok_s or 0.0 for b in run]
        kv = max(b.kv_usage_pct or 0.0 for b in run)
        waits = sorted({b.waiting or 0 for b in run})
        queue = f"{waits[0]}" if len(waits) == 1 else f"{waits[0]}-{waits[-1]}"
        detail = (
            f"{len(run)} consecutive windows with {a.running} running and {queue} "
            f"waiting admitted nobody (prompt throughput 0, the running count unchanged, the queue not shorter) "
            f"while the KV cache was at most {r(kv, 1)} % full; {r(min(gens))}-{r(max(gens))} tok/s generated"
        )
        spans.append(_span("stalled", track, a, z, z.t_s, z.time, run, nxt is not None, detail, ev))

    # deadlock (running 0, queue, nothing done) and frozen (silence with requests in flight)
    used_silence: set[int] = set()  # seqs of lines whose following silence a deadlock took
    for ix in _runs(track, track.df, _deadlocked(), interval, 1):
        group = track.beats(ix)
        z = group[-1]
        nxt = track.beat(ix[-1] + 1)
        silence_end: tuple[int | None, float | None, str | None] = (None, None, None)
        if nxt is not None and limit < nxt.t_s - z.t_s <= MAX_SILENCE_S:
            silence_end = (nxt.seq, nxt.t_s, nxt.time)
        elif nxt is None:
            end = _log_end(data, z)
            if end[1] is not None and limit < end[1] - z.t_s <= MAX_SILENCE_S:
                silence_end = end
        if len(group) >= MIN_DEADLOCK_WINDOWS or silence_end[1] is not None:
            end_t, end_time = z.t_s, z.time
            ev = [_ev(data, x) for x in group[:MAX_EVIDENCE]]
            detail = (
                f"{len(group)} window(s) with Running 0 and {group[0].waiting} waiting, nothing generated "
                "or prefilled"
            )
            if silence_end[1] is not None:
                end_t, end_time = silence_end[1], silence_end[2]
                used_silence.add(z.seq)
                detail += f", then no periodic line for {_dur(end_t - z.t_s)}" + (
                    " (until the next one)" if nxt is not None else " (to the end of the log)"
                )
                ev = ev[: MAX_EVIDENCE - 3] + _inside(data, z.file, z.seq, silence_end[0], z.t_s, end_t)
                if nxt is not None:
                    ev.append(_ev(data, nxt))
            spans.append(
                _span(
                    "deadlock",
                    track,
                    group[0],
                    nxt if (nxt is not None and silence_end[1] is not None) else z,
                    end_t,
                    end_time,
                    group,
                    nxt is not None,
                    detail,
                    ev,
                )
            )

    # a silence follows the lines whose next one comes after ``limit``, and the last line
    silent = track.df.filter(((pl.col("t_s").shift(-1) - pl.col("t_s")) > limit) | (pl.col("i") == n - 1))
    for k in silent["i"].to_list():
        b, nxt = track.beats([k])[0], track.beat(k + 1)
        if b.seq in used_silence:
            continue
        if nxt is not None:
            gap = nxt.t_s - b.t_s
            if gap <= limit:
                continue
            if b.process and nxt.process and b.process != nxt.process:
                continue  # another process: a restart, not a freeze
            stop_seq: int | None = nxt.seq
            stop_t: float | None = nxt.t_s
            stop_time = nxt.time
        else:
            stop_seq, stop_t, stop_time = _log_end(data, b)
            if stop_t is None or stop_t - b.t_s <= limit:
                continue
            gap = stop_t - b.t_s
        if gap > MAX_SILENCE_S:
            continue  # a day or more without a line: an excerpt of several days or logs, not a freeze we can date
        held = []
        if (b.waiting or 0) > 0:
            held.append(f"{b.waiting} waiting")
        if track.vllm and b.running > 0:
            held.append(f"{b.running} running")
        if not held and not track.vllm and nxt is not None and nxt.decode_line and nxt.running > 0:
            held.append(
                f"{nxt.running} running when the lines resumed with a Decode batch line and no prefill "
                "between"
            )
        if not held:
            continue  # the load had ended: an idle engine prints nothing
        missing = max(0, int(gap / interval) - 1)
        detail = (
            f"no periodic line for {_dur(gap)} (about {missing} missing at the ~{r(interval, 1)} s interval) "
            f"with {', '.join(held)}"
        )
        if b.gen_tok_s is not None and b.decode_line:
            detail += f"; the last line before it showed {r(b.gen_tok_s)} tok/s"
        if nxt is None:
            detail += "; the periodic lines never resumed"
        ev = [_ev(data, b)] + _inside(data, b.file, b.seq, stop_seq, b.t_s, b.t_s + gap)
        if nxt is not None:
            ev.append(_ev(data, nxt))
        closing = nxt if nxt is not None else b
        sp = _span(
            "frozen", track, b, closing, b.t_s + gap, stop_time, [], nxt is not None, detail, ev, missing
        )
        if nxt is None and stop_seq is not None:
            sp = sp.model_copy(update={"end_line": data.events[stop_seq].line})
        spans.append(sp)
    return spans


def stalls(data: RunData) -> Stalls | NotApplicable:
    """Spans with requests in flight and no progress (see the module docstring for the method).
    Computed once per run (the report and ``stalled_seqs`` share it)."""
    if "stalls" not in data.memo:
        data.memo["stalls"] = _stalls(data)
    out: Stalls | NotApplicable = data.memo["stalls"]
    return out


def _stalls(data: RunData) -> Stalls | NotApplicable:
    tracks = _tracks(data)
    if not tracks:
        return NotApplicable(
            reason="no periodic lines (vLLM stats lines, SGLang Decode batch lines) to follow the "
            "engine's progress with"
        )
    spans: list[StallSpan] = []
    for tr in tracks:
        spans += _track_spans(data, tr)
    spans.sort(key=lambda s: (s.start_t_s, s.engine))
    main = max(tracks, key=len)
    peak, peak_per = _peaks(main)
    interval = main.interval
    src = "vLLM stats lines" if main.vllm else "SGLang Decode batch and Prefill batch lines"
    method = (
        f"Per engine, the {src} in time order (logging interval ~{r(interval, 1) if interval else '?'} s, the "
        f"median spacing). Stalled: {MIN_STALL_WINDOWS}+ consecutive windows with requests running, no prefill and "
        f"generation below {STALL_FRACTION:.0%} of the sustained peak (highest median of 3 consecutive busy "
        f"windows) both in aggregate and per request, or exactly 0; or (vLLM) {MIN_HELD_WINDOWS}+ windows with a queue "
        f"nobody was admitted from (prompt throughput 0, running unchanged, queue not shorter) while the KV cache "
        f"was under {HELD_KV_PCT:g} % full. Deadlock: Running 0 with a waiting queue and "
        f"nothing generated or prefilled, for {MIN_DEADLOCK_WINDOWS}+ windows or followed by silence. Frozen: no "
        f"periodic line for more than {MISSING_INTERVALS} intervals past the expected one (and at least "
        f"{MIN_SILENCE_S:g} s, at most a day) while the last line showed requests in flight; silence after the load "
        "ended is idle (vLLM logs idle windows at DEBUG), silence across a process change is a restart."
    )
    return Stalls(
        method=method,
        interval_s=r(interval, 3),
        peak_tok_s=r(peak),
        peak_per_request_tok_s=r(peak_per, 3),
        spans=spans,
    )


def stalled_seqs(data: RunData) -> frozenset[int]:
    """Run-order indexes of the periodic lines inside a ``stalled`` or ``deadlock`` span: windows a
    decode-rate analysis should leave out (a stall is not a stable decode rate). Built once per run."""
    if "stalled_seqs" not in data.memo:
        res = stalls(data)
        out: set[int] = set()
        if isinstance(res, Stalls):
            bounds = [
                (s.engine, s.file, s.start_t_s, s.end_t_s)
                for s in res.spans
                if s.kind in ("stalled", "deadlock")
            ]
            for tr in _tracks(data) if bounds else []:
                inside = [
                    (pl.col("file") == f) & (pl.col("t_s") >= t0) & (pl.col("t_s") <= t1)
                    for g, f, t0, t1 in bounds
                    if g == tr.label
                ]
                if inside:
                    out.update(tr.df.filter(pl.any_horizontal(inside))["seq"].to_list())
        data.memo["stalled_seqs"] = frozenset(out)
    seqs: frozenset[int] = data.memo["stalled_seqs"]
    return seqs


def without_stalls(data: RunData, series: Series) -> Series:
    """``series`` without its windows inside a ``stalled`` or ``deadlock`` span (the same series when
    there are none): a decode rate is taken over the engine's work, never over a stall. A left-out
    stretch leaves a hole longer than the logging interval, so stretches on either side stay apart."""
    skip = stalled_seqs(data)
    if not skip:
        return series
    mask = series.frame["seq"].is_in(list(skip))
    if not mask.any():
        return series
    return replace(series, frame=series.frame.filter(~mask))


__all__ = ["Beat", "StallSpan", "Stalls", "stalled_seqs", "stalls", "without_stalls"]
