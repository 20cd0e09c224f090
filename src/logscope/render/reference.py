"""The event reference (docs/events.md), generated from the models so it cannot drift from the code."""

from __future__ import annotations

import typing

from logscope.events import EVENT_TYPES, Event


def _type_name(annotation: object) -> str:
    text = str(annotation).replace("typing.", "")
    for a, b in (("<class '", ""), ("'>", ""), ("NoneType", "None")):
        text = text.replace(a, b)
    return text.replace("|", "\\|")


def event_reference() -> str:
    """Markdown: the fields every event has, then one table per kind."""
    out = [
        "# Event reference",
        "",
        "Generated from `logscope.events` by `python -m logscope.render.reference`; a test fails when this",
        "file is stale. Field names carry their unit. Fields that are `None` when the log does not say them",
        "are marked optional.",
        "",
        "## Fields of every event",
        "",
        "| field | type | meaning |",
        "|---|---|---|",
    ]
    for name, f in Event.model_fields.items():
        out.append(f"| `{name}` | `{_type_name(f.annotation)}` | {f.description or ''} |")
    out += [
        "",
        "A kind's frame (`run.frame(kind)`, and the store's `store[kind]`) has these fields, then two columns:",
        "",
        "| column | type | meaning |",
        "|---|---|---|",
        "| `ts` | `Datetime` | the wall-clock time: the run's start plus `t_s`; null when the date is unknown |",
        "| `ts_source` | `str` | where the date came from: `log` (printed with its year), `file_date` (the year of a "
        "full date elsewhere in the file, e.g. a `docker logs -t` stamp), `mtime` (the year of the file's "
        "modification time: vLLM prints none), `none` (no date: `ts` is null) |",
    ]
    for kind, cls in EVENT_TYPES.items():
        doc = " ".join((cls.__doc__ or "").split())
        out += ["", f"## `{kind}`", "", doc, "", "| field | type | meaning |", "|---|---|---|"]
        for name, f in cls.model_fields.items():
            if name in Event.model_fields:
                continue
            opt = " (optional)" if type(None) in typing.get_args(f.annotation) else ""
            out.append(f"| `{name}` | `{_type_name(f.annotation)}`{opt} | {f.description or ''} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":  # pragma: no cover
    print(event_reference(), end="")
