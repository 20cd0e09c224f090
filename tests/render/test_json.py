"""JSON: goldens of the case fixtures, docs/contract.md keys, and the generated JSON Schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from logscope.analyses.compare import compare
from logscope.render.json_report import (
    compare_schema,
    render_compare_json,
    render_json,
    report_schema,
    schema_text,
)
from tests.conftest import FIXTURES, ROOT, check_golden
from tests.render.cases import CASES, at_root, loaded

GOLDENS = Path(__file__).parent / "goldens"

# docs/contract.md, "Report (analyze --format json)": extend, never rename or remove
CONTRACT_TOP = [
    "logscope_version",
    "engine",
    "engine_version",
    "files",
    "lines",
    "not_applicable",
    "coverage",
    "stable_decode",
    "prefill",
    "spec_decode",
    "kv_pool",
    "cold_start",
    "disturbances",
    "findings",
]
CONTRACT_SECTIONS: dict[str, list[str]] = {
    "coverage": ["lines", "events", "unparsed", "unparsed_candidates"],
    "stable_decode": [
        "method",
        "concurrency",
        "samples",
        "duration_s",
        "mean_tok_s",
        "median_tok_s",
        "min_tok_s",
        "max_tok_s",
        "per_request_tok_s",
        "ms_per_token",
        "start_line",
        "end_line",
    ],
    "prefill": ["mean_tok_s", "median_tok_s", "max_tok_s", "samples", "chunk_series"],
    "spec_decode": [
        "mean_acceptance_length",
        "acceptance_rate_pct",
        "accepted_tok_s",
        "drafted_tok_s",
        "wasted_draft_pct",
        "per_position_acceptance",
        "verdict",
    ],
    "kv_pool": [
        "pools",
        "tokens",
        "memory_gib",
        "max_model_len",
        "max_concurrency",
        "shortfall_pct",
        "overcommit_gib",
        "max_running_requests",
    ],
    "cold_start": ["phases", "total_s"],
    "disturbances": ["oom", "oom_by_rank", "runtime_compiles", "preemptions", "retractions", "errors"],
}
CONTRACT_NESTED = {
    ("prefill", "chunk_series"): ["request", "tok_s", "decay_pct"],
    ("cold_start", "phases"): ["name", "seconds", "start_line"],
}
CONTRACT_FINDING = ["code", "severity", "confidence", "title", "message", "fix", "count", "ranks", "evidence"]
CONTRACT_EVIDENCE = ["file", "line", "text"]
CONTRACT_COMPARE = ["base", "other", "labels", "degradation", "sections"]
CONTRACT_DEGRADATION = ["metric", "ratio_mean", "ratio_median", "ratio_peak", "context_ratio"]


def _props(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """The properties of ``node``, following $ref and nullable anyOf."""
    while True:
        if "$ref" in node:
            node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
        elif "anyOf" in node:
            node = next(x for x in node["anyOf"] if x.get("type") != "null")
        elif node.get("type") == "array":
            node = node["items"]
        else:
            return dict(node.get("properties", {}))


@pytest.mark.parametrize("name", CASES)
def test_json_golden(name: str, update_goldens: bool) -> None:
    _run, report = loaded(name)
    check_golden(GOLDENS / f"{name}.json", render_json(report) + "\n", update_goldens)


def test_schemas_are_current(update_goldens: bool) -> None:
    check_golden(ROOT / "docs" / "report.schema.json", schema_text(report_schema()), update_goldens)
    check_golden(ROOT / "docs" / "compare.schema.json", schema_text(compare_schema()), update_goldens)


def test_schema_holds_the_contract_keys() -> None:
    schema = report_schema()
    top = schema["properties"]
    assert [k for k in CONTRACT_TOP if k not in top] == []
    for section, keys in CONTRACT_SECTIONS.items():
        props = _props(schema, top[section])
        assert [k for k in keys if k not in props] == [], section
    for (section, field), keys in CONTRACT_NESTED.items():
        props = _props(schema, _props(schema, top[section])[field])
        assert [k for k in keys if k not in props] == [], (section, field)
    finding = _props(schema, top["findings"])
    assert [k for k in CONTRACT_FINDING if k not in finding] == []
    assert [k for k in CONTRACT_EVIDENCE if k not in _props(schema, finding["evidence"])] == []
    cmp = compare_schema()
    assert [k for k in CONTRACT_COMPARE if k not in cmp["properties"]] == []
    assert [k for k in CONTRACT_DEGRADATION if k not in _props(cmp, cmp["properties"]["degradation"])] == []


def _validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


CORPUS = sorted(str(p.relative_to(ROOT)) for p in (FIXTURES / "vllm" / "corpus").glob("*.log"))[:12]


@pytest.mark.parametrize("name", CASES)
def test_case_reports_validate(name: str) -> None:
    _run, report = loaded(name)
    data = json.loads(render_json(report))
    errors = list(_validator(report_schema()).iter_errors(data))
    assert errors == [], errors[:3]
    assert list(data)[: len(CONTRACT_TOP)] == CONTRACT_TOP


@pytest.mark.parametrize("path", CORPUS)
def test_corpus_reports_validate(path: str) -> None:
    import logscope

    with at_root():
        report = logscope.load(path).analyze()
    data = json.loads(render_json(report))
    assert list(_validator(report_schema()).iter_errors(data)) == []
    for section in CONTRACT_SECTIONS:
        assert (data[section] is None) == (section in data["not_applicable"]) or section == "coverage"


def test_compare_json_validates() -> None:
    a, _ = loaded(CASES[0])
    b, _ = loaded(CASES[-1])
    data = json.loads(render_compare_json(compare(a, b)))
    assert list(_validator(compare_schema()).iter_errors(data)) == []
    assert [k for k in CONTRACT_COMPARE if k not in data] == []
