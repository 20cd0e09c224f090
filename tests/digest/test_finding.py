"""Findings: counts per rank (Ray's dedup counted), rank labels, evidence lines, severity floors."""

from __future__ import annotations

from logscope.digest.finding import (
    RAY_COPIES,
    Finding,
    at_or_above,
    count_ranks,
    count_ranks_of,
    evidence_list,
    evidence_of,
    rank_label,
)
from logscope.events import Error, Warning_


def _warning(
    line: int,
    *,
    tp: int | None = None,
    dp: int | None = None,
    process: str | None = None,
    repeated: int = 1,
    raw: str = "x",
) -> Warning_:
    return Warning_(
        file="f.log",
        line=line,
        tp_rank=tp,
        dp_rank=dp,
        process=process,
        repeated=repeated,
        raw=raw,
        message=raw,
        template=raw,
    )


def test_rank_labels() -> None:
    assert rank_label(_warning(1, tp=3)) == "TP3"
    assert rank_label(_warning(1, tp=3, dp=1)) == "DP1 TP3"
    assert rank_label(_warning(1, dp=0)) == "DP0"
    assert rank_label(_warning(1, process="APIServer pid=1")) == "APIServer pid=1"
    assert rank_label(_warning(1)) == "main"


def test_count_ranks_sorts_numerically_and_counts_ray_copies() -> None:
    events = [_warning(i, tp=t) for i, t in enumerate([10, 2, 0, 2], 1)]
    events.append(_warning(9, process="RayWorkerWrapper pid=7, ip=10.0.0.1", repeated=35))
    total, ranks = count_ranks(events)
    assert total == 4 + 35
    assert list(ranks) == ["TP0", "TP2", "TP10", "RayWorkerWrapper pid=7, ip=10.0.0.1", RAY_COPIES]
    assert ranks["TP2"] == 2 and ranks[RAY_COPIES] == 34


def test_count_ranks_of_a_frame_is_count_ranks_of_its_events() -> None:
    """Real logs: Ray's dedup (repeated lines), TP ranks, DP ranks and process tags."""
    import logscope
    from logscope.analyses.base import RunData
    from tests.conftest import FIXTURES

    for name in (
        "vllm/corpus/v0-ray-multinode-405b-repeated-across-cluster.log",
        "sglang/formats/1_prefixes.log",
        "digest/AR01/fail-vllm-ray.log",
    ):
        data = RunData.of(logscope.load(FIXTURES / name))
        for kind, seqs in data.kind_index.items():
            events = [data.events[i] for i in seqs]
            assert count_ranks_of(data.frame(kind)) == count_ranks(events), (name, kind)
    assert count_ranks_of(data.frame(kind).clear()) == (0, {})


def test_evidence_points_at_the_line_that_holds_the_text() -> None:
    raw = "ERROR head\nERROR Traceback (most recent call last):\nERROR   File x\nERROR ValueError: boom"
    e = Error(file="f.log", line=10, end_line=13, raw=raw, message="head", exception="ValueError")
    ev = evidence_of(e, "ValueError: boom")
    assert (ev.line, ev.text) == (13, "ERROR ValueError: boom")
    assert evidence_of(e).line == 10
    # raw lines that do not map one to one onto physical lines: the record's first line
    glued = Error(file="f.log", line=5, end_line=5, raw="a\nb", message="a")
    assert evidence_of(glued, "b").line == 5


def test_evidence_list_dedups_and_caps() -> None:
    events = [_warning(i) for i in range(1, 9)]
    got = evidence_list([events[0], events[0], *events[1:]], limit=3)
    assert [e.line for e in got] == [1, 2, 3]


def _finding(severity: str) -> Finding:
    return Finding(
        code="XX01",
        slug="x",
        severity=severity,
        confidence="observed",  # type: ignore[arg-type]
        title="t",
        message="m",
        fix="f",
    )


def test_at_or_above() -> None:
    fs = [_finding("info"), _finding("warning"), _finding("error")]
    assert [f.severity for f in at_or_above(fs, "warning")] == ["warning", "error"]
    assert [f.severity for f in at_or_above(fs, "error")] == ["error"]
    assert at_or_above(fs, "never") == []
