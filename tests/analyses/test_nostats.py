"""Served without statistics (analyses/nostats.py, rule CV02): on the real vLLM 0.32.0 capture with
``--disable-log-stats`` and on real served logs with stats lines."""

from __future__ import annotations

from pathlib import Path

import pytest

import logscope
from logscope.analyses.base import NotApplicable, RunData
from logscope.analyses.decode import stable_decode
from logscope.analyses.nostats import missing_stats
from logscope.analyses.prefill import prefill
from tests.conftest import FIXTURES

NO_STATS = FIXTURES / "vllm" / "no_stats" / "vllm-disable-log-stats.log"
WITH_STATS = FIXTURES / "digest" / "CV02" / "pass-vllm-served-with-stats.log"


def _data(path: Path) -> RunData:
    return RunData.of(logscope.load(path))


def test_disable_log_stats_names_the_cause_in_decode_and_prefill() -> None:
    data = _data(NO_STATS)
    [m] = missing_stats(data)
    # 40 `POST /v1/completions` 200 (the 4 GET /metrics and 1 POST /tokenize are not traffic)
    assert (m.traffic, m.traffic_what, m.first_traffic.line, m.first_line) == (
        40,
        "access lines of inference requests",
        105,
        101,
    )
    assert m.cause_line is not None and m.cause_line.line == 8
    assert "--disable-log-stats" in m.cause and "--disable-log-stats" in m.fix
    for res in (stable_decode(data), prefill(data)):
        assert isinstance(res, NotApplicable)
        assert "the server answered 40 access lines of inference requests (first at line 105)" in res.reason
        assert "`'disable_log_stats': True`, line 8" in res.reason


def test_api_server_count_and_no_cause(tmp_path: Path) -> None:
    """The real log with its args' last entry changed (disclosed): api_server_count 2, then nothing."""
    text = NO_STATS.read_text(encoding="utf-8")
    assert "'disable_log_stats': True}" in text
    two = tmp_path / "api2.log"
    two.write_text(text.replace("'disable_log_stats': True}", "'api_server_count': 2}"), encoding="utf-8")
    [m] = missing_stats(_data(two))
    assert "`--api-server-count 2` (line 8)" in m.cause and "--api-server-count 1" in m.fix
    # no cause in the args, and the untimed access lines cannot show that the traffic outlasted a
    # stats interval: nothing is claimed
    none = tmp_path / "none.log"
    none.write_text(text.replace(", 'disable_log_stats': True}", "}"), encoding="utf-8")
    assert missing_stats(_data(none)) == []


def test_no_claim_on_real_logs_that_cannot_show_it() -> None:
    """The engine died 10 requests into the load (before a stats interval passed); the JSON-formatted
    log's stats records exist but are not understood (CV01's business): no missing-statistics claim."""
    for name in ("vllm-enginecore-killed.log", "vllm-jsonfmt-logreq-errors.jsonl"):
        path = FIXTURES / "vllm" / "no_stats" / name
        assert missing_stats(_data(path)) == [], name


@pytest.mark.parametrize("order", ["stats-first", "nostats-first"])
def test_each_lifetime_on_its_own(tmp_path: Path, order: str) -> None:
    """Two real server processes appended to one file: only the lifetime without stats is named,
    with the cause from its own args line."""
    a, b = WITH_STATS.read_text(encoding="utf-8"), NO_STATS.read_text(encoding="utf-8")
    first, second = (a, b) if order == "stats-first" else (b, a)
    path = tmp_path / "two.log"
    path.write_text(first + second, encoding="utf-8")
    [m] = missing_stats(_data(path))
    offset = first.count("\n") if order == "stats-first" else 0
    assert (m.first_line, m.first_traffic.line) == (101 + offset, 105 + offset)
    assert m.cause_line is not None and m.cause_line.line == 8 + offset


@pytest.mark.parametrize(
    "path",
    sorted((FIXTURES / "vllm" / "corpus").glob("*.log"))
    + sorted((FIXTURES / "sglang" / "corpus").glob("*.log"))
    + [WITH_STATS],
    ids=lambda p: p.name,
)
def test_quiet_on_real_runs(path: Path) -> None:
    assert missing_stats(_data(path)) == []
