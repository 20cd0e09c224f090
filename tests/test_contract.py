"""docs/contract.md is the public contract; this keeps it and the code in step, both ways.

When this fails after you added a command, option, event kind, field, report key or runs column,
its message gives the exact text to add to docs/contract.md; ``python -m tests.contract_tables --add``
adds it for you (never removing anything; then say what a new command does in its middle cell). When it fails because the contract names what the code lacks: the contract
says extend, never rename; put the name back in the code (or, if it was never released, take it out
of the contract)."""

from __future__ import annotations

import re

from tests import contract_tables as ct
from tests.conftest import ROOT

CONTRACT = ROOT / "docs" / "contract.md"
_NAME = re.compile(r"`(-{0,2}[A-Za-z_][A-Za-z0-9_.\-]*)`(\?)?")


def _tables() -> dict[str, dict[str, list[tuple[str, bool]]]]:
    """section title -> first cell -> [(name, optional)] of the row's last cell."""
    out: dict[str, dict[str, list[tuple[str, bool]]]] = {}
    section = ""
    for line in CONTRACT.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = line[3:].split(" (")[0].strip()
            out[section] = {}
        elif line.startswith("| ") and not line.startswith("|---"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            key = cells[0].strip("`")
            out.setdefault(section, {})[key] = [
                (m.group(1), bool(m.group(2))) for m in _NAME.finditer(cells[-1])
            ]
    return out


def _diff(where: str, have: list[tuple[str, bool]], want: list[tuple[str, bool]]) -> list[str]:
    problems = []
    have_names, want_names = {n for n, _ in have}, {n for n, _ in want}
    missing = [(n, o) for n, o in want if n not in have_names]
    if missing:
        problems.append(
            f"{where}: add {ct.field_list(missing) if isinstance(missing[0][1], bool) else missing}"
        )
    extra = [n for n, _ in have if n not in want_names]
    if extra:
        problems.append(f"{where}: names {', '.join(extra)}, which the code lacks (extend, never rename)")
    return problems


def _check(problems: list[str]) -> None:
    assert not problems, (
        "docs/contract.md is out of step with the code (`python -m tests.contract_tables --add` "
        "adds what is missing):\n  " + "\n  ".join(problems)
    )


def test_commands_and_options() -> None:
    rows = _tables()["Command line"]
    problems = []
    for name, opts in ct.commands().items():
        key = f"logscope {name}"
        if key not in rows:
            problems.append(
                f"add this row to the Command line table: {ct.command_row(name, opts)} "
                "(and say what it does in the middle cell)"
            )
            continue
        problems += _diff(f"the row of `{key}`", rows[key], [(o, False) for o in opts])
    known = {f"logscope {n}" for n in ct.commands()}
    problems += [
        f"the Command line table lists `{k}`, which is not a command"
        for k in rows
        if k not in known and k != "command"
    ]
    _check(problems)


def test_event_kinds_and_fields() -> None:
    rows = _tables()["Events"]
    problems = _diff(
        "the row `(every kind)` of the Events table", rows.get("(every kind)", []), ct.common_fields()
    )
    problems += _diff(
        "the row `(frames)` of the Events table",
        rows.get("(frames)", []),
        [(c, False) for c in ct.FRAME_COLUMNS],
    )
    kinds = ct.event_kinds()
    for kind, (_doc, fields) in kinds.items():
        if kind not in rows:
            problems.append(f"add this row to the Events table: {ct.event_row(kind)}")
            continue
        problems += _diff(f"the row of `{kind}` in the Events table", rows[kind], fields)
        marks = {n: o for n, o in rows[kind]}
        wrong = [n for n, o in fields if n in marks and marks[n] != o]
        if wrong:
            problems.append(
                f"the row of `{kind}`: mark optional fields with ? and only those: {', '.join(wrong)}"
            )
    problems += [
        f"the Events table lists kind `{k}`, which the models lack (extend, never rename)"
        for k in rows
        if k not in kinds and k not in ("kind", "(every kind)", "(frames)")
    ]
    _check(problems)


def _key_tables(
    section: str, want: dict[str, list[str]], exists: dict[str, list[str]] | None = None
) -> list[str]:
    """``want``: the rows the contract must have; ``exists``: every path the code has (a row may name an
    object listed where it first appears elsewhere: the order of keys moved it)."""
    rows = _tables()[section]
    problems = []
    for path, keys in want.items():
        if path not in rows:
            problems.append(f"add this row to the {section} table: {ct.key_row(path, keys)}")
            continue
        problems += _diff(
            f"the row of `{path}` in the {section} table",
            [(n, False) for n, _ in rows[path]],
            [(k, False) for k in keys],
        )
    problems += [
        f"the {section} table lists `{p}`, which the schema lacks (extend, never rename)"
        for p in rows
        if p not in (exists or want) and p not in ("object", "table")
    ]
    return problems


def test_report_keys_follow_the_schema() -> None:
    _check(_key_tables("Report", ct.report_rows(), ct.report_rows(every=True)))


def test_comparison_keys_follow_the_schema() -> None:
    _check(_key_tables("Comparison", ct.compare_rows(), ct.compare_rows(every=True)))


def test_runs_table_columns() -> None:
    _check(_key_tables("Store", {"runs": ct.runs_columns()}))


def test_the_contract_is_cited_where_it_is() -> None:
    """README, --help and the JSON schemas point to docs/contract.md, which exists (CONTRACT.md did not)."""
    from click.testing import CliRunner

    from logscope.cli import main

    assert CONTRACT.is_file()
    for f in ("README.md", "docs/report.schema.json", "docs/compare.schema.json", "docs/guide.md"):
        text = (ROOT / f).read_text(encoding="utf-8")
        assert "CONTRACT.md" not in text, f
    assert "docs/contract.md" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/contract.md" in (ROOT / "docs/report.schema.json").read_text(encoding="utf-8")
    help_text = CliRunner().invoke(main, ["analyze", "--help"], terminal_width=200).output
    assert "CONTRACT" not in help_text and "docs/contract.md" in help_text


def test_the_failure_message_says_what_to_add() -> None:
    problems = _diff(
        "the row of `throughput` in the Events table",
        [("gen_tok_s", False)],
        [("gen_tok_s", False), ("new_field_tok_s", True)],
    )
    assert problems == ["the row of `throughput` in the Events table: add `new_field_tok_s`?"]
    problems = _diff("x", [("gone", False)], [])
    assert problems == ["x: names gone, which the code lacks (extend, never rename)"]


def test_add_missing_restores_rows_and_names_and_removes_nothing() -> None:
    text = CONTRACT.read_text(encoding="utf-8")
    lines = text.splitlines()
    row = next(ln for ln in lines if ln.startswith("| `decode_batch` |"))
    cut = text.replace(row + "\n", "").replace("`gen_tok_s`, `running`, `waiting`", "`running`, `waiting`")
    cut = cut.replace(
        "| `logscope rules` | the digest rules; with CODE, one rule's documentation | (none) |",
        "| `logscope rules` | the digest rules; with CODE, one rule's documentation | `--gone` |",
    )
    fixed = ct.add_missing(cut)
    assert "`decode_batch`" in fixed and "`gen_tok_s`" in fixed.split("| `throughput` |")[1].split("\n")[0]
    assert "`--gone`" in fixed  # a name the code lacks stays: the test reports it (a rename?)
    assert ct.add_missing(text) == text
