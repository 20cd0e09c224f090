"""Prefill rates, SGLang chunk series and decode starvation on small event lists."""

from __future__ import annotations

from typing import Any

import pytest

from logscope.analyses.base import NotApplicable
from logscope.analyses.prefill import Prefill, prefill
from logscope.events import Config, Event, ServerReady

from .build import run, sglang, stats


def _ok(res: Prefill | NotApplicable) -> Prefill:
    assert isinstance(res, Prefill), getattr(res, "reason", res)
    return res


def test_vllm_prefill_windows_and_sustained() -> None:
    rows = [
        (3000.0, 0.0, 1, 9),
        (20000.0, 0.2, 3, 7),
        (22000.0, 0.3, 6, 4),
        (21000.0, 0.1, 9, 1),
        (9000.0, 40.0, 10, 0),
    ] + [(0.0, 500.0, 10)] * 5
    pf = _ok(prefill(run(stats(rows))))
    assert pf.samples == 5
    assert (pf.min_tok_s, pf.max_tok_s) == (3000.0, 22000.0)
    assert pf.sustained is not None
    assert pf.sustained.samples == 3 and pf.sustained.min_tok_s == 20000.0
    st = pf.decode_starvation
    assert st is not None
    assert [w.line for w in st.windows] == [101, 102, 103]  # line 100 has only the prefilling request running
    assert st.boundary_lines == [104]  # the last prefill ended inside it; decode-only after
    assert st.reference_per_request_tok_s == 50.0


def test_long_prefill_threshold_is_reported() -> None:
    cfg = Config(
        engine="vllm",
        file="t.log",
        line=1,
        t_s=0.0,
        args={"long_prefill_token_threshold": 0},
        form="non_default_args",
    )
    rows = [(20000.0, 0.2, 3, 7), (22000.0, 0.3, 6, 4)] + [(0.0, 500.0, 10)] * 4
    pf = _ok(prefill(run([cfg, *stats(rows)])))
    assert pf.decode_starvation is not None and pf.decode_starvation.long_prefill_token_threshold == 0


def test_no_prompt_throughput() -> None:
    res = prefill(run(stats([(0.0, 500.0, 10)] * 4)))
    assert isinstance(res, NotApplicable) and "none with prompt throughput above 0" in res.reason


def _chunks(
    rates: list[float], *, running: int = 0, t0: float = 100.0, chunk: int = 8192, last: int | None = None
) -> list[tuple[str, float, dict[str, Any]]]:
    out = []
    for k, rate in enumerate(rates):
        tokens = last if last is not None and k == len(rates) - 1 else chunk
        out.append(
            ("p", t0 + k, {"new_seq": 1, "new_token": tokens, "running": running, "input_tok_s": rate})
        )
    return out


def _cfg(chunk: int = 8192) -> list[Event]:
    return [
        Config(
            engine="sglang",
            file="s.log",
            line=1,
            t_s=0.0,
            args={"chunked_prefill_size": chunk},
            form="server_args",
        )
    ]


def test_chunk_series_split_by_running_and_short_last_chunk() -> None:
    rows = (
        _chunks([20000, 18000, 16000, 15000], running=0)  # a request ending on a chunk boundary
        + _chunks([21000, 19000, 17000], running=1, t0=104.0, last=1000)  # ended by its short last chunk
        + _chunks([22000, 20000], running=2, t0=107.0)
    )
    pf = _ok(prefill(run(_cfg() + sglang(rows), engine="sglang")))
    assert [c.chunks for c in pf.chunk_series] == [4, 3, 2]
    # the log's first prefill line has no previous one, but the log holds no start-up either (it begins mid-run):
    # the predecessor is outside the file and the rate is the chunk's own, so it stays (dropping it read -16.7 %)
    assert pf.chunk_series[0].excluded_chunks == []
    assert [c.decay_pct for c in pf.chunk_series] == [-25.0, -19.0, -9.1]
    assert pf.chunk_series[1].new_tokens == 8192 * 2 + 1000
    assert pf.chunk_decay_median_pct == -19.0
    assert pf.chunk_size == 8192


def test_chunk_after_idle_is_left_out_and_warmup_ignored() -> None:
    warm = [("p", 10.0, {"new_seq": 1, "new_token": 16, "running": 0, "input_tok_s": 20.0})]
    rows = warm + _chunks([300.0, 20000, 18000, 16000], t0=200.0)  # 190 s after the warm-up line
    events = _cfg() + sglang(rows)
    events.insert(2, ServerReady(engine="sglang", file="s.log", line=150, t_s=12.0))
    pf = _ok(prefill(run(events, engine="sglang")))
    (c,) = pf.chunk_series
    assert c.excluded_chunks == [1] and c.tok_s == [20000, 18000, 16000] and c.chunks == 4
    assert pf.samples == 3 and pf.min_tok_s == 16000  # warm-up and the idle-polluted line left out
    assert "warm-up" in pf.method


def test_chunk_size_inferred_without_config() -> None:
    rows = _chunks([20000, 18000, 16000], last=500)
    pf = _ok(prefill(run(sglang(rows), engine="sglang")))
    assert pf.chunk_size == 8192  # the most common and largest #new-token of single-sequence lines
    (c,) = pf.chunk_series
    assert c.chunks == 3 and c.tok_s == [
        20000,
        18000,
        16000,
    ]  # no start-up in the log: the first chunk is kept


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_nothing(engine: str) -> None:
    res = prefill(run([], engine=engine))
    assert isinstance(res, NotApplicable) and "no prefill-rate lines" in res.reason
