"""Preempted requests (analyses/preempted.py): V0 lines name them; V1 and SGLang logs say why they cannot (null
with a reason, never an empty list that reads as "none")."""

from __future__ import annotations

import logscope
from logscope.analyses.base import NotApplicable, RunData
from logscope.analyses.preempted import PreemptedRequest, preempted_requests
from tests.conftest import FIXTURES

CASES = FIXTURES / "vllm" / "preempted"


def _pr(path: str) -> list[PreemptedRequest] | NotApplicable:
    return preempted_requests(RunData.of(logscope.load(FIXTURES / path)))


def test_v0_line_names_its_request_and_the_count() -> None:
    got = _pr("vllm/preempted/v0-swap-preempted-then-assert-issue10685.log")
    assert isinstance(got, list) and len(got) == 1
    p = got[0]
    assert (p.request_id, p.line, p.mode, p.cumulative) == (
        "cmpl-f5a99b8801444ad19f63a764ebb493b7-0",
        1,
        "SWAP",
        1,
    )
    assert (
        p.window_line is None and p.generated_tokens is None
    )  # no stats line after it; tokens never printed


def test_v0_line_after_stats_lines_is_placed_in_the_next_window() -> None:
    got = _pr("vllm/preempted/v0-063-swap-preempted-issue546.log")
    assert isinstance(got, list)
    assert [(p.request_id, p.line, p.window_line, p.cumulative) for p in got] == [
        ("chat-7e630abf1a8b4c8a88775b1e98a54cf2", 3, None, None)
    ]  # the excerpt ends before the window's stats line


def test_v0_window_line_is_the_next_stats_line_of_the_file(tmp_path: object) -> None:
    # the issue-546 stats lines around the issue-10685 preemption line: the window is the stats line after it
    a = (CASES / "v0-063-swap-preempted-issue546.log").read_text().splitlines()
    b = (CASES / "v0-swap-preempted-then-assert-issue10685.log").read_text().splitlines()
    from pathlib import Path

    path = Path(str(tmp_path)) / "spliced.log"
    path.write_text("\n".join([a[0], b[0], a[1]]) + "\n")
    got = preempted_requests(RunData.of(logscope.load(path)))
    assert isinstance(got, list) and [(p.line, p.window_line) for p in got] == [(2, 3)]


def test_v1_gives_null_with_the_reason() -> None:
    got = _pr(
        "vllm/corpus/gen-c5_kv_tight_preempt_burst.log"
    )  # real preemptions (README), no per-request line
    assert isinstance(got, NotApplicable) and "V1 prints no per-request preemption line" in got.reason


def test_sglang_gives_null_with_the_reason() -> None:
    got = _pr("sglang/corpus/decode-oom-retracted-reqs-multinode-tp16.log")
    assert isinstance(got, NotApplicable) and "#retracted_reqs" in got.reason


def test_v0_without_a_version_is_unknown_not_none() -> None:
    got = _pr("vllm/corpus/v0-042-h800-kv-cache-full-pending-queue.log")
    assert isinstance(got, NotApplicable) and "unknown, not none" in got.reason


def test_report_carries_the_key_and_the_reason() -> None:
    rep = logscope.load(FIXTURES / "vllm/corpus/gen-c5_kv_tight_preempt_burst.log").analyze()
    assert rep.preempted_requests is None and "preempted_requests" in rep.not_applicable
