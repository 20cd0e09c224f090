"""What docs/contract.md must list, read from the code: the commands and their options, the event
kinds and their fields, the report's and the comparison's keys (from the JSON schemas). Used by
``tests/test_contract.py``; ``python -m tests.contract_tables`` prints the tables to paste, and
``python -m tests.contract_tables --add`` adds what is missing to docs/contract.md (rows and names;
it never removes one: a name the code lost is a rename, which the test reports)."""

from __future__ import annotations

import typing
from typing import Any

FRAME_COLUMNS = ("ts", "ts_source")  # columns a kind's frame adds after the model's fields


def commands() -> dict[str, list[str]]:
    """``logscope NAME`` -> its options (long names), in the order ``--help`` shows them."""
    import click

    from logscope.cli import main

    out: dict[str, list[str]] = {}
    for name, cmd in sorted(main.commands.items()):
        opts = []
        for p in cmd.params:
            if isinstance(p, click.Option):
                longs = [o for o in p.opts if o.startswith("--")]
                if longs and longs[0] != "--help":
                    opts.append(longs[0])
        out[name] = opts
    return out


def common_fields() -> list[tuple[str, bool]]:
    from logscope.events.models import Event

    return [(n, _optional(f.annotation)) for n, f in Event.model_fields.items()]


def _optional(annotation: Any) -> bool:
    return type(None) in typing.get_args(annotation)


def event_kinds() -> dict[str, tuple[str, list[tuple[str, bool]]]]:
    """kind -> (the model's first docstring sentence, [(field, optional)] beyond the common fields)."""
    from logscope.events import EVENT_TYPES
    from logscope.events.models import Event

    out = {}
    for kind, cls in EVENT_TYPES.items():
        doc = " ".join((cls.__doc__ or "").split())
        fields = [
            (n, _optional(f.annotation)) for n, f in cls.model_fields.items() if n not in Event.model_fields
        ]
        out[kind] = (doc, fields)
    return out


def _props(schema: dict[str, Any], node: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """(the $defs name, the properties) of an object node, through $ref, nullable anyOf, arrays and maps."""
    name = None
    for _ in range(20):
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            node = schema["$defs"][name]
        elif "anyOf" in node:
            alts = [x for x in node["anyOf"] if x.get("type") != "null"]
            if len(alts) != 1:
                return None, {}
            node = alts[0]
        elif node.get("type") == "array":
            node = node.get("items", {})
        elif isinstance(node.get("additionalProperties"), dict) and "properties" not in node:
            node = node["additionalProperties"]
        else:
            break
    return name, dict(node.get("properties", {}))


def key_rows(schema: dict[str, Any], root: str, every: bool = False) -> dict[str, list[str]]:
    """path -> keys, for every object in the JSON schema (each model once: where it first appears;
    ``every``: at each place, to depth 6)."""
    rows: dict[str, list[str]] = {}
    seen: set[str] = set()

    def walk(path: str, node: dict[str, Any]) -> None:
        name, props = _props(schema, node)
        if not props or (name is not None and name in seen) or path.count(".") > 6:
            return
        if name is not None and not every:
            seen.add(name)
        rows[path] = list(props)
        for k, v in props.items():
            walk(f"{path}.{k}", v)

    walk(root, schema)
    return rows


def report_rows(every: bool = False) -> dict[str, list[str]]:
    from logscope.render.json_report import report_schema

    return key_rows(report_schema(), "report", every)


def compare_rows(every: bool = False) -> dict[str, list[str]]:
    from logscope.render.json_report import compare_schema

    return key_rows(compare_schema(), "comparison", every)


def field_list(fields: list[tuple[str, bool]]) -> str:
    return (
        ", ".join(f"`{n}`" + ("?" if opt else "") for n, opt in fields) or "(none beyond the common fields)"
    )


def first_sentence(doc: str) -> str:
    head = doc.split(". ")[0].rstrip(".")
    return (head + ".").replace("|", "\\|") if head else ""


def event_row(kind: str) -> str:
    doc, fields = event_kinds()[kind]
    return f"| `{kind}` | {first_sentence(doc)} | {field_list(fields)} |"


def runs_columns() -> list[str]:
    from logscope.store.layout import RUNS_COLUMNS

    return list(RUNS_COLUMNS)


def key_row(path: str, keys: list[str]) -> str:
    return f"| `{path}` | {', '.join(f'`{k}`' for k in keys)} |"


def command_row(name: str, opts: list[str]) -> str:
    return f"| `logscope {name}` | | {', '.join(f'`{o}`' for o in opts) or '(none)'} |"


def wanted_rows() -> dict[str, dict[str, str]]:
    """section title -> first cell -> the row the code asks for."""
    return {
        "Command line": {f"logscope {n}": command_row(n, o) for n, o in commands().items()},
        "Events": {
            "(every kind)": f"| (every kind) | fields of every event | {field_list(common_fields())} |",
            **{k: event_row(k) for k in event_kinds()},
        },
        "Report": {p: key_row(p, k) for p, k in report_rows().items()},
        "Comparison": {p: key_row(p, k) for p, k in compare_rows().items()},
        "Store": {"runs": key_row("runs", runs_columns())},
    }


def add_missing(text: str) -> str:
    """``text`` (docs/contract.md) with the rows and names the code has and it lacks added."""
    import re

    names = re.compile(r"`(-{0,2}[A-Za-z_][A-Za-z0-9_.\-]*)`(\?)?")
    want = wanted_rows()
    out: list[str] = []
    section, seen, last_row = "", set(), -1

    def flush() -> None:
        at = last_row + 1 if last_row >= 0 else len(out)
        for key, row in want.get(section, {}).items():
            if key not in seen:
                out.insert(at, row)
                at += 1

    for line in text.splitlines():
        if line.startswith("## "):
            flush()
            section, seen, last_row = line[3:].split(" (")[0].strip(), set(), -1
        elif line.startswith("| ") and not line.startswith("|---"):
            cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
            key = cells[0].strip().strip("`")
            row = want.get(section, {}).get(key)
            if row is not None:
                seen.add(key)
                have = {m.group(1) for m in names.finditer(cells[-1])}
                extra = [
                    m.group(0)
                    for m in names.finditer(re.split(r"(?<!\\)\|", row.strip())[-2])
                    if m.group(1) not in have
                ]
                if extra:
                    cells[-1] = (
                        " "
                        + ", ".join(
                            x for x in [cells[-1].strip().removesuffix("(none)").strip(" ,"), *extra] if x
                        )
                        + " "
                    )
                    line = "|" + "|".join(cells) + "|"
            out.append(line)
            last_row = len(out) - 1
            continue
        out.append(line)
    flush()
    return "\n".join(out) + "\n"


if __name__ == "__main__":  # pragma: no cover
    import sys
    from pathlib import Path

    if sys.argv[1:] == ["--add"]:
        doc = Path(__file__).resolve().parents[1] / "docs" / "contract.md"
        doc.write_text(add_missing(doc.read_text(encoding="utf-8")), encoding="utf-8")
        raise SystemExit(0)
    for name, opts in commands().items():
        print(command_row(name, opts))
    print()
    print(field_list(common_fields()))
    print()
    for kind in event_kinds():
        print(event_row(kind))
    print()
    for path, keys in report_rows().items():
        print(key_row(path, keys))
    print()
    for path, keys in compare_rows().items():
        print(key_row(path, keys))
    print()
    print(key_row("runs", runs_columns()))
