"""Every rule has a failing and a passing log case and a current docs page; each case's findings match
its golden (``pytest --update-goldens`` rewrites the goldens and docs/rules/).

Cases live in ``fixtures/digest/<CODE>/``: ``fail-*.log`` must give at least one finding of the rule,
``pass-*.log`` none. They are excerpts of real logs (sources in ``fixtures/digest/README.md``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import logscope
from logscope.digest import all_rules, digest
from logscope.digest.docs import pages
from tests.conftest import FIXTURES, ROOT, check_golden

CASES = FIXTURES / "digest"
DOCS = ROOT / "docs" / "rules"
CODES = [r.code for r in all_rules()]


def _cases() -> list[Path]:
    return sorted(CASES.glob("*/*.log"))


def findings_json(path: Path) -> str:
    """The run's findings as the golden stores them (file names without their directory)."""
    run = logscope.load(path)
    out = []
    for f in digest(run, run.analyze()).findings:
        d = f.model_dump(mode="json")
        for ev in d["evidence"]:
            ev["file"] = Path(ev["file"]).name
        out.append(d)
    return json.dumps(out, indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("code", CODES)
def test_every_rule_has_a_failing_and_a_passing_case(code: str) -> None:
    folder = CASES / code
    fails = sorted(folder.glob("fail-*.log"))
    passes = sorted(folder.glob("pass-*.log"))
    assert fails, f"rule {code} has no failing case: add fixtures/digest/{code}/fail-<what>.log (real lines)"
    assert passes, f"rule {code} has no passing case: add fixtures/digest/{code}/pass-<what>.log (real lines)"


def test_no_cases_for_unknown_rules() -> None:
    folders = {p.name for p in CASES.iterdir() if p.is_dir()}
    assert folders <= set(CODES), f"case folders without a rule: {sorted(folders - set(CODES))}"


@pytest.mark.parametrize("path", _cases(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_case(path: Path, update_goldens: bool) -> None:
    code = path.parent.name
    text = findings_json(path)
    codes = [f["code"] for f in json.loads(text)]
    if path.name.startswith("fail-"):
        assert code in codes, f"{path.name} should give a {code} finding; got {codes}"
    elif path.name.startswith("pass-"):
        assert code not in codes, f"{path.name} should give no {code} finding; got {codes}"
    else:
        pytest.fail(f"{path.name}: a case is named fail-*.log or pass-*.log")
    check_golden(path.with_suffix(".findings.json"), text, update_goldens)


def test_every_finding_shows_its_evidence_lines() -> None:
    for path in sorted(CASES.glob("*/fail-*.log")):
        lines = path.read_text(encoding="utf-8").split("\n")
        run = logscope.load(path)
        for f in digest(run).findings:
            assert f.evidence, f"{path.name}: {f.code} has no evidence"
            for ev in f.evidence:
                assert (
                    lines[ev.line - 1].rstrip().startswith(ev.text[:80].rstrip())
                    or ev.text.strip() in lines[ev.line - 1]
                ), f"{path.name}: {f.code} evidence line {ev.line} is not the line shown"


@pytest.mark.parametrize("name", sorted(pages()))
def test_rule_docs_are_current(name: str, update_goldens: bool) -> None:
    if update_goldens:
        DOCS.mkdir(parents=True, exist_ok=True)
    check_golden(DOCS / name, pages()[name], update_goldens)


def test_no_stale_rule_docs() -> None:
    extra = {p.name for p in DOCS.glob("*.md")} - set(pages())
    assert not extra, f"docs/rules/ pages of no rule: {sorted(extra)} (codes are retired, not reused)"


def test_ray_deduplicated_lines_count_for_all_their_copies() -> None:
    from logscope.digest.finding import RAY_COPIES

    run = logscope.load(CASES / "AR01" / "fail-vllm-ray.log")
    (f,) = [x for x in digest(run).findings if x.code == "AR01"]
    assert f.count == 35  # one line '[repeated 34x across cluster]'
    assert f.ranks[RAY_COPIES] == 34
