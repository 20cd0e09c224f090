"""The ``logscope`` command line: arguments -> api -> renderer -> exit code.

The only module that imports click. Errors reach the user as one sentence on stderr and exit code 2,
never as a traceback.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click

from logscope.errors import LogscopeError
from logscope.events import KINDS, Event

F = TypeVar("F", bound=Callable[..., Any])

ENGINE_CHOICE = click.Choice(["auto", "vllm", "sglang"])


def _engine(value: str) -> str | None:
    return value


def friendly(fn: F) -> F:
    """Turn LogscopeError (and broken pipes) into a clean exit."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except LogscopeError as exc:
            click.echo(f"logscope: {exc}", err=True)
            sys.exit(2)
        except BrokenPipeError:
            sys.exit(0)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="logscope")
def main() -> None:
    """Forensics for vLLM and SGLang server logs."""


def _event_dict(ev: Event, with_raw: bool) -> dict[str, Any]:
    d = ev.model_dump(exclude=None if with_raw else {"raw"})
    return d


def _stream(paths: tuple[str, ...], engine: str, keep_unparsed: bool) -> tuple[Iterator[Event], Any]:
    from logscope.api import iter_events
    from logscope.parsers.framing import ReadStats

    stats = ReadStats()
    return iter_events(list(paths), engine, keep_unparsed=keep_unparsed, stats=stats), stats


@main.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("--engine", type=ENGINE_CHOICE, default="auto", show_default=True)
@click.option("--kind", "kinds", multiple=True, type=click.Choice(KINDS), help="only these kinds (repeatable)")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv", "parquet"]), default="jsonl", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write here instead of stdout")
@click.option("--include-unparsed", is_flag=True, help="also emit the lines no grammar understood")
@click.option("--with-raw", is_flag=True, help="include each event's raw text")
@friendly
def events(
    logs: tuple[str, ...], engine: str, kinds: tuple[str, ...], fmt: str, output: str | None,
    include_unparsed: bool, with_raw: bool,
) -> None:
    """The typed events of LOGS (files, .gz, directories, - for stdin)."""
    from logscope.errors import UnreadableInput

    want = set(kinds)
    keep_unparsed = include_unparsed or "unparsed" in want
    stream, stats = _stream(logs, engine, keep_unparsed)
    selected = (e for e in stream if (not want or e.kind in want) and (keep_unparsed or e.kind != "unparsed"))
    if fmt == "jsonl":
        out = open(output, "w", encoding="utf-8") if output else sys.stdout  # noqa: SIM115
        try:
            for ev in selected:
                out.write(json.dumps(_event_dict(ev, with_raw), ensure_ascii=False, default=str))
                out.write("\n")
        finally:
            if output:
                out.close()
    else:
        from logscope.render.tables import write_table

        write_table(list(selected), fmt, output, with_raw=with_raw)
    for note in stats.notes:
        click.echo(f"logscope: note: {note}", err=True)
    if stats.text_lines == 0:
        from logscope.api import _nothing_read

        raise UnreadableInput(_nothing_read(list(logs), stats))


@main.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("--engine", type=ENGINE_CHOICE, default="auto", show_default=True)
@click.option("--top", type=int, default=15, show_default=True, help="unparsed templates to list")
@friendly
def coverage(logs: tuple[str, ...], engine: str, top: int) -> None:
    """Lines per kind, and the lines no grammar understood (likely new formats first)."""
    from logscope.api import load
    from logscope.render.coverage import coverage_report, render_coverage

    run = load(list(logs), engine)
    render_coverage(coverage_report(run, top=top))


@main.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("--engine", type=ENGINE_CHOICE, default="auto", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False))
@friendly
def analyze(logs: tuple[str, ...], engine: str, fmt: str, output: str | None) -> None:
    """Report of one run (several LOGS are one run: ranks, nodes, rotated parts)."""
    from logscope.api import load
    from logscope.render.text import render_summary, summary

    run = load(list(logs), engine)
    data = summary(run)
    if fmt == "json":
        text = json.dumps(data, indent=2, default=str)
        if output:
            with open(output, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
        else:
            click.echo(text)
        return
    render_summary(data, output)


if __name__ == "__main__":  # pragma: no cover
    main()
