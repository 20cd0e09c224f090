"""The report from the sparse reader (what `analyze` uses) equals the report from a full parse."""

from __future__ import annotations

from pathlib import Path

import pytest

import logscope
from logscope.api import load_for_report
from tests.conftest import FIXTURES

LOGS = sorted(
    [*FIXTURES.glob("case/*.log"), *FIXTURES.glob("vllm/corpus/*.log"), *FIXTURES.glob("sglang/corpus/*.log")]
)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_sparse_report_equals_full(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # skip lines from line 50 on (the default reads 3000 lines whole first: the whole of these logs);
    # the first timestamp, where the run's clock and cold start begin, is within the first 50 lines
    monkeypatch.setattr("logscope.api.SPARSE_HEAD", 50)
    full = logscope.load(path).analyze().to_dict()
    sparse = load_for_report(path).analyze().to_dict()
    assert sparse == full
