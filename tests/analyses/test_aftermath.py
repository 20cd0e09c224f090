"""Before and after disturbances (analyses/aftermath.py) on real lines: V0 preemption lines after stats lines,
a V1 stats window with 'Preemptions: 4', and the shared generated runs (no disturbance line: an empty list)."""

from __future__ import annotations

from pathlib import Path

import pytest

import logscope
from logscope.analyses.aftermath import DisturbanceSegment, disturbance_segments
from logscope.analyses.base import NotApplicable, RunData
from tests.conftest import FIXTURES

GENERATED = sorted(FIXTURES.glob("*/corpus/gen-*.log"))


def _segs(path: Path) -> list[DisturbanceSegment] | NotApplicable:
    return disturbance_segments(RunData.of(logscope.load(path)))


def test_v0_preemption_after_two_stats_windows() -> None:
    # vllm#546: 7220.5 and 7154.5 tok/s with 2 running, then the preemption line; the excerpt ends there
    segs = _segs(FIXTURES / "vllm/preempted/v0-063-swap-preempted-issue546.log")
    assert isinstance(segs, list) and len(segs) == 1
    g = segs[0]
    assert (g.kinds, g.count, g.start_line, g.start_time) == (["preemption"], 1, 3, "10-28 11:16:41")
    assert g.before is not None and (g.before.windows, g.before.start_line, g.before.end_line) == (2, 1, 2)
    assert (g.before.median_tok_s, g.before.median_per_request_tok_s) == (7187.5, 3593.75)
    assert g.after is None and g.after_over_before is None and g.recovered is None  # unknown, not "recovered"


def test_a_retraction_with_no_decode_window_to_measure_around() -> None:
    # formats reference (SGLang prefixes): a retraction line (#retracted_reqs: 3) among decode lines of four
    # DP groups whose summed series has no window: the segment is reported with both sides unknown (the
    # windows were once built from the series' rows, and an empty row list made a column polars cannot sum)
    segs = _segs(FIXTURES / "sglang/formats/1_prefixes.log")
    assert isinstance(segs, list) and len(segs) == 1
    g = segs[0]
    assert (g.kinds, g.count, g.start_line) == (["retract"], 1, 15)
    assert g.before is None and g.after is None and g.recovered is None


def test_v1_stats_window_with_preemptions_is_the_disturbance() -> None:
    # formats reference 2.1 [R]: a window at 1055.3 tok/s with 18 running, then one with 'Preemptions: 4'
    segs = _segs(FIXTURES / "digest/SC01/fail-vllm-v1-stats.log")
    assert isinstance(segs, list) and len(segs) == 1
    g = segs[0]
    assert (g.count, g.start_line) == (4, 2)
    assert g.before is not None and (g.before.windows, g.before.median_per_request_tok_s) == (1, 58.63)


def test_retraction_lines_without_decode_lines_are_not_applicable() -> None:
    segs = _segs(FIXTURES / "digest/SC01/fail-sglang-retract.log")
    assert isinstance(segs, NotApplicable) and "no decode series" in segs.reason


@pytest.mark.parametrize("path", GENERATED, ids=lambda p: p.name)
def test_generated_runs_have_no_disturbance_line(path: Path) -> None:
    # SGLang c1/c2 never retracted: none. vLLM 0.32 prints no Preemptions field even when it preempts (corpus
    # README: c5 preempted, /metrics counted 75): unknown, so null with the reason, not an empty list
    segs = _segs(path)
    if "startup_fail" in path.name:
        assert isinstance(segs, NotApplicable)
    elif "sglang" in str(path):
        assert segs == []
    else:
        assert isinstance(segs, NotApplicable) and "cannot tell none from some" in segs.reason
