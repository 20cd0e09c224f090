"""The decode and stall analyses' window tests run as polars expressions over a series' columns; each
is checked here against the plain loop over ``Sample`` rows it replaced, on random series that hold
the cases the loop tells apart (idle gaps, bridged single windows, prefill unknown, NaN and zero rates)."""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, field

import polars as pl
import pytest

from logscope.analyses.base import is_gap
from logscope.analyses.decode import _stretches, pure_decode
from logscope.analyses.series import Sample, Series
from logscope.analyses.stalls import BEAT_SCHEMA, _peaks, _Track


@dataclass
class _Loop:
    level: int
    idx: list[int] = field(default_factory=list)
    bridged: list[int] = field(default_factory=list)


def _loop_stretches(samples: list[Sample], level: int, interval: float) -> list[_Loop]:
    """The loop ``decode._stretches`` was before it ran on columns."""
    out: list[_Loop] = []
    cur: _Loop | None = None
    pending: int | None = None
    for i, s in enumerate(samples):
        contiguous = i > 0 and not is_gap(s.t_s - samples[i - 1].t_s, interval)
        ok = pure_decode(s) and s.running == level
        if ok:
            if cur is not None and contiguous and (pending is None or pending == i - 1):
                if pending is not None:
                    cur.bridged.append(pending)
                cur.idx.append(i)
            else:
                if cur is not None:
                    out.append(cur)
                cur = _Loop(level, [i])
            pending = None
        elif (
            cur is not None and contiguous and pending is None and s.prefill is False and cur.idx[-1] == i - 1
        ):
            pending = i
        else:
            if cur is not None:
                out.append(cur)
            cur, pending = None, None
    if cur is not None:
        out.append(cur)
    return out


def _random_series(rng: random.Random, n: int) -> Series:
    t = 0.0
    samples = []
    for i in range(n):
        t += rng.choice([1.0, 1.0, 1.0, 2.0, 9.0])  # 9 s: an idle gap at the 1 s interval
        samples.append(
            Sample(
                seq=i,
                file="x.log",
                line=i + 1,
                t_s=t,
                gen_tok_s=rng.choice([0.0, 50.0, 60.0, 70.0, float("nan")]),
                running=rng.choice([0, 3, 4, 4, 4]),
                prefill=rng.choice([True, False, False, False, None]),
            )
        )
    return Series.of_samples("0", "TP0", samples, "SGLang Decode batch lines", "decode-log window")


@pytest.mark.parametrize("seed", range(40))
def test_stretches_on_columns_equal_the_loop(seed: int) -> None:
    rng = random.Random(seed)
    s = _random_series(rng, rng.randint(0, 80))
    got = _stretches(s, 1.0, 3)
    pure = [x for x in s.samples if pure_decode(x)]
    want: list[_Loop] = []
    for level in sorted({x.running for x in pure}, reverse=True):
        want = [st for st in _loop_stretches(s.samples, level, 1.0) if len(st.idx) >= 3]
        if want:
            break
    assert [(st.level, st.idx, st.bridged) for st in got] == [(st.level, st.idx, st.bridged) for st in want]


def _loop_peaks(rows: list[dict[str, object]], interval: float) -> tuple[float | None, float | None]:
    """The loop ``stalls._peaks`` was: the highest median of 3 consecutive busy windows of one run."""
    agg: list[list[float]] = []
    per: list[list[float]] = []
    prev = None
    for b in rows:
        if not b["decode_line"] or b["gen_tok_s"] is None:
            continue
        if b["running"] <= 0:  # type: ignore[operator]
            prev = None
            continue
        if prev is None or not b["t_s"] - prev["t_s"] <= 1.5 * interval + 1.5:  # type: ignore[operator]
            agg.append([])
            per.append([])
        agg[-1].append(b["gen_tok_s"])  # type: ignore[arg-type]
        per[-1].append(b["gen_tok_s"] / b["running"])  # type: ignore[operator]
        prev = b

    def best(runs: list[list[float]]) -> float | None:
        ms = [statistics.median(r[i : i + 3]) for r in runs for i in range(len(r) - 2)]
        return max(ms) if ms else None

    return best(agg), best(per)


@pytest.mark.parametrize("seed", range(40))
def test_sustained_peak_on_columns_equals_the_loop(seed: int) -> None:
    rng = random.Random(seed)
    rows = []
    t = 0.0
    for i in range(rng.randint(0, 60)):
        t += rng.choice([1.0, 1.0, 2.0, 9.0])
        decode = rng.random() < 0.85
        rows.append(
            {
                "seq": i,
                "file": "x.log",
                "line": i + 1,
                "t_s": t,
                "running": rng.choice([0, 1, 2, 4, 4]),
                "waiting": None,
                "gen_tok_s": rng.uniform(0, 500) if decode else None,
                "prefill": not decode,
                "decode_line": decode,
                "prompt_tok_s": None,
                "kv_usage_pct": None,
            }
        )
    df = pl.DataFrame(rows, schema=BEAT_SCHEMA).with_row_index("i")
    assert _peaks(_Track("TP0", df, 1.0, False, [])) == _loop_peaks(rows, 1.0)
