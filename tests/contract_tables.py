"""What docs/contract.md must list, read from the code: the commands and their options, the event
kinds and their fields, the report's and the comparison's keys (from the JSON schemas). Used by
``tests/test_contract.py``; ``python -m tests.contract_tables`` prints the tables to paste."""

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
        fields = [(n, _optional(f.annotation)) for n, f in cls.model_fields.items() if n not in Event.model_fields]
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


def key_rows(schema: dict[str, Any], root: str) -> dict[str, list[str]]:
    """path -> keys, for every object in the JSON schema (each model once: where it first appears)."""
    rows: dict[str, list[str]] = {}
    seen: set[str] = set()

    def walk(path: str, node: dict[str, Any]) -> None:
        name, props = _props(schema, node)
        if not props or (name is not None and name in seen):
            return
        if name is not None:
            seen.add(name)
        rows[path] = list(props)
        for k, v in props.items():
            walk(f"{path}.{k}", v)

    walk(root, schema)
    return rows


def report_rows() -> dict[str, list[str]]:
    from logscope.render.json_report import report_schema

    return key_rows(report_schema(), "report")


def compare_rows() -> dict[str, list[str]]:
    from logscope.render.json_report import compare_schema

    return key_rows(compare_schema(), "comparison")


def field_list(fields: list[tuple[str, bool]]) -> str:
    return ", ".join(f"`{n}`" + ("?" if opt else "") for n, opt in fields) or "(none beyond the common fields)"


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


if __name__ == "__main__":  # pragma: no cover
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
