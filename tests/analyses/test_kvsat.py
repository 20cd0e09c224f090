"""KV saturation episodes (analyses/kvsat.py) on real logs: the user-posted variants with a full cache, a real
vLLM 0.32 capture whose cache filled for three windows, and the shared generated runs (none saturates for 3+)."""

from __future__ import annotations

from pathlib import Path

import pytest

import logscope
from logscope.analyses.base import NotApplicable, RunData
from logscope.analyses.kvsat import KvEpisode, kv_saturation
from tests.conftest import FIXTURES

GENERATED = sorted(FIXTURES.glob("*/corpus/gen-*.log"))


def _eps(path: Path) -> list[KvEpisode] | NotApplicable:
    return kv_saturation(RunData.of(logscope.load(path)))


def test_vllm_v0_pending_queue_is_one_episode_until_the_end() -> None:
    # variant v0-042-h800: five stats lines at 99.2-100.0 % with 467-485 pending
    eps = _eps(FIXTURES / "vllm/corpus/v0-042-h800-kv-cache-full-pending-queue.log")
    assert isinstance(eps, list) and len(eps) == 1
    e = eps[0]
    assert (e.start_line, e.end_line, e.windows, e.max_waiting, e.until_end) == (1, 5, 5, 485, True)
    assert (e.start_time, e.end_time, e.max_usage_pct) == ("10-20 16:04:32", "10-20 16:04:52", 100.0)
    assert (e.running_start, e.running_end, e.running_max) == (156, 138, 156)
    assert e.outlasts_traffic is False  # running fell 12 % while the queue grew: KV05's symptom
    assert e.admitted_before is None  # no request lines: unknown, not "none"


def test_sglang_full_token_usage_counts_as_usage() -> None:
    # variant swa-hybrid: 'full token usage: 1.00' x3 then 0.96 x7 (hand-abbreviated lines without the queue)
    eps = _eps(
        FIXTURES / "sglang/corpus/swa-hybrid-full-token-usage-1.00-missing-bracket-then-user-abbreviated.log"
    )
    assert isinstance(eps, list) and len(eps) == 1
    e = eps[0]
    assert (e.start_line, e.end_line, e.windows, e.max_waiting, e.until_end, e.engine) == (
        1,
        10,
        10,
        2,
        True,
        "TP0",
    )
    assert e.outlasts_traffic is False


def test_real_capture_three_full_windows_then_drained() -> None:
    # vLLM 0.32 CPU, 24 MiB of KV: 95.7, 89.4, 95.7, 100.0, 95.7, 0.0 % -> lines 146-152 are one episode, the
    # 89.4 % window before it breaks the first run (one window only)
    eps = _eps(FIXTURES / "metrics/vllm-kvtight-metrics.log")
    assert isinstance(eps, list)
    assert [(e.start_line, e.end_line, e.windows, e.max_waiting, e.until_end) for e in eps] == [
        (146, 152, 3, 11, False)
    ]
    assert (eps[0].running_start, eps[0].running_end) == (8, 6)


@pytest.mark.parametrize("path", GENERATED, ids=lambda p: p.name)
def test_no_generated_run_saturates(path: Path) -> None:
    # c1 peaks at 93.6 %, c5's 97.9 and 100.0 % windows are single ones: no 3-window episode anywhere
    eps = _eps(path)
    if "startup_fail" in path.name:
        assert isinstance(eps, NotApplicable)
    else:
        assert eps == []


def test_request_logging_capture_without_saturation_gives_the_empty_list() -> None:
    # real request-logging capture at 1 GiB of KV: no saturation, so the empty list (none), not null (unknown)
    eps = _eps(FIXTURES / "vllm/captures/vllm-logreq-errors.log")
    assert eps == []


def test_real_capture_with_request_logging_names_the_admitted_requests() -> None:
    # fixtures/vllm/kvsat: the first six stats lines are at 95.7-100 %; the 24 requests the bench client opened
    # with were added before the first one (ids cmpl-bench-a0269d64-<i>-0-<hex>)
    eps = _eps(FIXTURES / "vllm/kvsat/vllm-kvtight-logreq.log")
    assert isinstance(eps, list) and len(eps) == 1
    e = eps[0]
    assert (e.start_line, e.end_line, e.windows, e.max_waiting, e.until_end) == (179, 223, 6, 19, False)
    assert (e.start_time, e.end_time, e.running_start, e.running_end) == (
        "12-03 18:10:53",
        "12-03 18:11:43",
        15,
        7,
    )
    assert e.admitted_before_count == 24 and e.admitted_before is not None and len(e.admitted_before) == 20
    assert e.admitted_before[0] == "cmpl-bench-a0269d64-0-0-a096be73"
