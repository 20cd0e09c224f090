"""The report as JSON (the keys of docs/contract.md) and its JSON Schema.

``docs/report.schema.json`` and ``docs/compare.schema.json`` are generated from the pydantic models
by ``python -m logscope.render.json_report``; a test fails when they are stale and validates reports
of the fixtures against them.
"""

from __future__ import annotations

import json
from typing import Any

from logscope.analyses.report import Report


def render_json(report: Report, indent: int | None = 2) -> str:
    return report.to_json(indent=indent)


def render_compare_json(comparison: Any, indent: int | None = 2) -> str:
    return str(comparison.to_json(indent=indent))


def _schema(model: Any, name: str, title: str, description: str) -> dict[str, Any]:
    body = model.model_json_schema(mode="serialization")
    head = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": name,
        "title": title,
        "description": description,
    }
    body.pop("title", None)
    body.pop("description", None)
    return {**head, **body}


def report_schema() -> dict[str, Any]:
    out = _schema(
        Report,
        "report.schema.json",
        "logscope report",
        "`logscope analyze --format json`: keys as in docs/contract.md; a section is null when the log lacks "
        "what it needs, with the reason in not_applicable.",
    )
    # The report holds the digest's findings untyped (the analyses do not import the digest); the
    # schema names their model.
    from logscope.digest.finding import Finding

    finding = Finding.model_json_schema(mode="serialization", ref_template="#/$defs/{model}")
    defs = out.setdefault("$defs", {})
    for name, sub in finding.pop("$defs", {}).items():
        defs.setdefault(name, sub)
    defs["Finding"] = finding
    prop = out["properties"]["findings"]
    if not prop.get("items"):
        prop["items"] = {"$ref": "#/$defs/Finding"}
        prop["description"] = "the digest's findings, worst first"
    return out


def compare_schema() -> dict[str, Any]:
    from logscope.analyses.compare import Comparison

    return _schema(
        Comparison,
        "compare.schema.json",
        "logscope comparison",
        "`logscope compare BASE OTHER --format json`: ratio_* = BASE / OTHER of the stable decode rate.",
    )


def schema_text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


if __name__ == "__main__":  # pragma: no cover
    from pathlib import Path

    docs = Path(__file__).resolve().parents[3] / "docs"
    (docs / "report.schema.json").write_text(schema_text(report_schema()), encoding="utf-8")
    (docs / "compare.schema.json").write_text(schema_text(compare_schema()), encoding="utf-8")
