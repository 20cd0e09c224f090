"""The ``logscope`` command line: arguments -> api -> renderer -> exit code.

The only module that imports click. Errors reach the user as one sentence on stderr and exit code 2,
never as a traceback.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click

from logscope.errors import LogscopeError
from logscope.events import KINDS, Event

F = TypeVar("F", bound=Callable[..., Any])

ENGINE_CHOICE = click.Choice(["auto", "vllm", "sglang"])
FAIL_ON_CHOICE = click.Choice(["error", "warning", "never"])
REPORT_FORMAT_CHOICE = click.Choice(["text", "markdown", "json", "html"])
ANALYZE_FORMAT_CHOICE = click.Choice(["text", "markdown", "json", "html", "br"])  # br: llm-d benchmark report


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


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from logscope.doctor import version_line

    click.echo(version_line())
    ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and the scanner in use, and exit (more: logscope doctor).")
def main() -> None:
    """Forensics for vLLM and SGLang server logs."""


def _stream(paths: tuple[str, ...], engine: str, keep_unparsed: bool, jobs: int = 1) -> tuple[Iterator[Event], Any]:
    from logscope.api import iter_events
    from logscope.parsers.framing import ReadStats

    stats = ReadStats()
    return iter_events(list(paths), engine, keep_unparsed=keep_unparsed, stats=stats, jobs=jobs), stats


@main.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("--engine", type=ENGINE_CHOICE, default="auto", show_default=True)
@click.option("--kind", "kinds", multiple=True, type=click.Choice(KINDS), help="only these kinds (repeatable)")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv", "parquet"]), default="jsonl", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write here instead of stdout")
@click.option("--include-unparsed", is_flag=True, help="also emit the lines no grammar understood")
@click.option("--with-raw", is_flag=True, help="include each event's raw text")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="parse several files at once in this many processes (same output as one process)")
@friendly
def events(
    logs: tuple[str, ...], engine: str, kinds: tuple[str, ...], fmt: str, output: str | None,
    include_unparsed: bool, with_raw: bool, jobs: int,
) -> None:
    """The typed events of LOGS (files, .gz, directories, - for stdin)."""
    want = set(kinds)
    keep_unparsed = include_unparsed or "unparsed" in want
    if fmt == "jsonl" and jobs > 1 and _events_lines(logs, engine, want, keep_unparsed, output, with_raw, jobs):
        return
    stream, stats = _stream(logs, engine, keep_unparsed, jobs)
    known = [0]  # events of a known kind seen (whatever was selected): is the input text at all?

    def counted(events: Iterator[Event]) -> Iterator[Event]:
        for e in events:
            known[0] += e.kind != "unparsed"
            yield e

    chosen = _chosen(want, keep_unparsed)
    selected = (e for e in counted(stream) if chosen(e.kind))
    if fmt == "jsonl":
        from logscope.render.jsonl import write_jsonl

        write_jsonl(selected, output, with_raw=with_raw)
    else:
        from logscope.render.tables import write_table

        write_table(list(selected), fmt, output, with_raw=with_raw)
    _events_done(logs, stats, known[0])


def _chosen(want: set[str], keep_unparsed: bool) -> Callable[[str], bool]:
    """Is an event of this kind written? (``--kind`` choices, unparsed only when asked for)"""
    return lambda kind: (not want or kind in want) and (keep_unparsed or kind != "unparsed")


def _events_done(logs: tuple[str, ...], stats: Any, known: int) -> None:
    """The reader's notes; an error when nothing in the input was text (``known``: events of a known
    kind seen, whatever was selected)."""
    from logscope.api import _nothing_read, nothing_read
    from logscope.errors import UnreadableInput

    for note in stats.notes:
        click.echo(f"logscope: note: {note}", err=True)
    if nothing_read(stats, known):
        raise UnreadableInput(_nothing_read(list(logs), stats))


def _events_lines(
    logs: tuple[str, ...], engine: str, want: set[str], keep_unparsed: bool, output: str | None, with_raw: bool,
    jobs: int,
) -> bool:
    """``events --format jsonl --jobs N`` on one big file: the workers write the JSON lines (the same
    bytes). False when the input is not one file worth cutting."""
    from logscope.api import iter_event_lines
    from logscope.parsers.framing import ReadStats
    from logscope.render.jsonl import NumberedLines, write_lines

    stats = ReadStats()
    pairs = iter_event_lines(list(logs), engine, keep_unparsed=keep_unparsed, stats=stats, jobs=jobs,
                             lines=NumberedLines(with_raw))
    if pairs is None:
        return False
    known = 0
    chosen = _chosen(want, keep_unparsed)

    def selected() -> Iterator[bytes]:
        nonlocal known
        for kind, text in pairs:
            known += kind != "unparsed"
            if chosen(kind):
                yield text

    write_lines(selected(), output)
    _events_done(logs, stats, known)
    return True


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
@click.option("--format", "fmt", type=ANALYZE_FORMAT_CHOICE, default="text", show_default=True,
              help="text: terminal tables; markdown: for a ticket (fits a GitHub comment); json: the keys of docs/contract.md; "
                   "html: one self-contained page with the figures; br: llm-d's benchmark report (BR v0.2) as JSON")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write the report here instead of stdout")
@click.option("--plots", "plots_dir", type=click.Path(file_okay=False),
              help="also write the figures into this directory, as PNG and SVG")
@click.option("--fail-on", type=FAIL_ON_CHOICE, default="never", show_default=True,
              help="exit 1 when a finding is at or above this severity (for CI)")
@click.option("--bench", "bench_files", multiple=True, type=click.Path(dir_okay=False),
              help="a benchmark client's output of this run (vllm bench serve / sglang bench_serving text or "
                   "JSON, AIPerf profile_export*.json/.csv/.jsonl, GuideLLM benchmarks.json/.yaml, genai-bench run "
                   "JSON, inference-perf lifecycle JSON, an llm-d benchmark report): its figures are checked "
                   "against the engine log (repeatable)")
@click.option("--metrics", "metrics_files", multiple=True, type=click.Path(exists=True),
              help="the server's saved Prometheus /metrics scrapes of this run: one scrape, a file of scrapes each after "
                   "a `# scrape_time <unix s>` line, or a folder of scrape files (repeatable)")
@click.option("--slo", "slo", metavar="GATES",
              help="latency and error gates, e.g. 'ttft_p95<=2s,tpot_p95<=50ms,error_rate<=1%%' (ttft, tpot, itl, e2e, "
                   "queue with _mean/_p50/_p90/_p95/_p99; error_rate): each is checked against the client (--bench), "
                   "else the metrics (--metrics); exit 1 when one fails or is unknown")
@click.option("--follow", is_flag=True,
              help="watch LOG grow (rotation and truncation handled): a live view and new findings on stderr; "
                   "Ctrl-C prints the final report")
@click.option("--interval", type=click.FloatRange(min=0.1), default=2.0, show_default=True,
              help="with --follow: seconds between refreshes")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="parse each big LOG in ranges over this many processes (the same report as one process)")
@click.option("--lifetime", type=click.IntRange(min=1), default=None, metavar="N",
              help="when the input holds several server lifetimes (restarts, appended logs, a folder of runs): "
                   "report on lifetime N (numbered from 1, listed in the report); default: the last one that "
                   "served traffic. Findings of every lifetime are kept")
@friendly
def analyze(
    logs: tuple[str, ...], engine: str, fmt: str, output: str | None, plots_dir: str | None, fail_on: str,
    bench_files: tuple[str, ...], follow: bool, interval: float, jobs: int, lifetime: int | None,
    metrics_files: tuple[str, ...], slo: str | None,
) -> None:
    """Report of one run (several LOGS are one run: ranks, nodes, rotated parts)."""
    from logscope.render.formats import check_outputs, emit_report, run_figures

    check_outputs(output, plots_dir)
    if slo is not None:
        from logscope.analyses.slo import SloSyntaxError, parse_slo

        try:
            parse_slo(slo)
        except SloSyntaxError as exc:
            raise click.BadParameter(str(exc), param_hint="--slo") from None
    if follow:
        if slo is not None:
            raise click.UsageError("--follow takes no --slo: gate the finished run")
        if len(logs) != 1:
            raise click.UsageError("--follow watches one LOG")
        if bench_files:
            raise click.UsageError("--follow takes no --bench: analyze the finished run with its client's output")
        if jobs > 1:
            raise click.UsageError("--follow reads as the log grows, in one process: it takes no --jobs")
        if metrics_files:
            raise click.UsageError("--follow takes no --metrics: analyze the finished run with its scrapes")
        from logscope.render.follow_view import follow_log

        run, report = follow_log(logs[0], engine, interval)
        if lifetime is not None or len(run.lifetimes) > 1:
            run = run.lifetime(lifetime)
            report = run.analyze()
    else:
        run = _load_run([*logs, *bench_files], engine, jobs).lifetime(lifetime)
        report = run.analyze(metrics=metrics_files, slo=slo)
    plots, written = run_figures(run, report, fmt, plots_dir)
    emit_report(report, fmt, output, plots)
    if written:
        click.echo(f"logscope: wrote {len(written) // 2} figure(s) to {plots_dir} (PNG and SVG)", err=True)
    if fail_on != "never":
        _exit_on_findings(report.findings, fail_on)
    if report.slo is not None:
        _exit_on_slo(report.slo)


def _exit_on_slo(slo: Any) -> None:
    """Each gate on stderr with its value and source; exit 1 when one fails or is unknown."""
    for ck in slo.checks:
        click.echo(f"logscope: SLO {ck.status.upper()}: {ck.detail}" + (f" [source: {ck.source}]" if ck.source else ""),
                   err=True)
    if not slo.passed:
        click.echo(f"logscope: SLO: {slo.failed} gate(s) failed, {slo.unknown} unknown (unknown is not a pass).",
                   err=True)
        sys.exit(1)


def _exit_on_findings(findings: list[Any], level: str) -> None:
    """Exit 1, with one sentence on stderr, when a finding is at or above ``level``."""
    from logscope.digest import at_or_above

    failing = at_or_above(findings, level)
    if failing:
        codes = ", ".join(sorted({f.code for f in failing}))
        click.echo(f"logscope: {len(failing)} finding(s) at or above {level}: {codes}.", err=True)
        sys.exit(1)


def _load_run(paths: list[str], engine: str, jobs: int = 1) -> Any:
    """``api.load`` with a progress bar on stderr for large inputs (only on a terminal)."""
    from logscope.api import load_for_report
    from logscope.parsers.framing import ReadStats
    from logscope.render.progress import reading_progress

    stats = ReadStats()
    with reading_progress(paths, stats):
        return load_for_report(paths, engine, stats=stats, jobs=jobs)


@main.command("compare")
@click.argument("base")
@click.argument("other")
@click.option("--engine", type=ENGINE_CHOICE, default="auto", show_default=True)
@click.option("--label", "labels", multiple=True, help="a name for BASE, then (given again) for OTHER")
@click.option("--format", "fmt", type=REPORT_FORMAT_CHOICE, default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write the comparison here instead of stdout")
@click.option("--plots", "plots_dir", type=click.Path(file_okay=False),
              help="also write the overlay figures into this directory, as PNG and SVG")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="parse each big log in ranges over this many processes (the same comparison as one process)")
@click.option("--bench", "bench_files", nargs=2, type=click.Path(dir_okay=False), default=None,
              metavar="BASE_CLIENT OTHER_CLIENT",
              help="the benchmark clients' outputs (text or --save-result JSON) of BASE and of OTHER: their workloads "
                   "are compared (not an A/B test when output length, prompts, concurrency or rate differ)")
@friendly
def compare_command(
    base: str, other: str, engine: str, labels: tuple[str, ...], fmt: str, output: str | None, plots_dir: str | None,
    jobs: int, bench_files: tuple[str, str] | None,
) -> None:
    """Two runs side by side: BASE and OTHER (each a log file, .gz or directory), and how much slower OTHER
    decodes (BASE / OTHER of the stable decode rate, by mean, median and peak)."""
    from logscope.analyses.compare import compare
    from logscope.render.formats import check_outputs, compare_figures, emit_compare

    if len(labels) > 2:
        raise click.UsageError("--label is given at most twice: BASE's name, then OTHER's")
    check_outputs(output, plots_dir)
    clients = [[f] for f in bench_files] if bench_files else [[], []]
    # each side's last lifetime that served traffic (an input may hold several: restarts, appended logs)
    run_a = _load_run([base, *clients[0]], engine, jobs).lifetime()
    run_b = _load_run([other, *clients[1]], engine, jobs).lifetime()
    cmp = compare(run_a, run_b, labels=list(labels) or None)
    plots, written = compare_figures(run_a, run_b, cmp, fmt, plots_dir)
    emit_compare(cmp, fmt, output, plots)
    if written:
        click.echo(f"logscope: wrote {len(written) // 2} figure(s) to {plots_dir} (PNG and SVG)", err=True)


@main.command("metrics")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--log", "logs", multiple=True, type=click.Path(exists=True),
              help="the server log of the same run: its stats lines are cross-checked against the counters")
@click.option("--engine", type=ENGINE_CHOICE, default="auto", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write here instead of stdout")
@friendly
def metrics_command(files: tuple[str, ...], logs: tuple[str, ...], engine: str, fmt: str, output: str | None) -> None:
    """Saved Prometheus /metrics scrapes (FILES: one scrape, a file of scrapes each after a `# scrape_time <unix s>`
    line, or a folder of scrape files): counter rates, gauges, latency quantiles from the histograms."""
    from logscope.analyses.base import NotApplicable
    from logscope.analyses.metrics import metrics_section
    from logscope.parsers.prometheus import read_metrics

    events = _load_run(list(logs), engine).events if logs else []
    res = metrics_section(read_metrics(list(files)), events)
    if isinstance(res, NotApplicable):
        raise LogscopeError(res.reason)
    if fmt == "json":
        text = res.model_dump_json(indent=2) + "\n"
        if output:
            with open(output, "w", encoding="utf-8") as fh:
                fh.write(text)
        else:
            click.echo(text, nl=False)
        return
    from rich.console import Console

    from logscope.render.doc import Heading, t
    from logscope.render.metrics_doc import metrics_blocks
    from logscope.render.terminal import render_blocks

    blocks = [Heading(1, (t("logscope metrics: " + ", ".join(f.rsplit("/", 1)[-1] for f in files)),), "top"),
              *metrics_blocks(res, 0)]
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            render_blocks(blocks, Console(file=fh, width=120, color_system=None))
    else:
        render_blocks(blocks, Console())


@main.command("ingest")
@click.argument("paths", nargs=-1, required=True)
@click.option("--out", "out", required=True, type=click.Path(file_okay=False),
              help="the store directory (made when missing; an existing store is added to)")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="parse with this many local processes")
@click.option("--dask-scheduler", "dask_scheduler", metavar="ADDRESS",
              help="run the per-run work as Dask tasks on this scheduler (needs logscope[dask]; the workers "
                   "must see the logs and the store at the same paths)")
@click.option("--engine", type=ENGINE_CHOICE, default="auto", show_default=True)
@click.option("--group", type=click.Choice(["file", "dir"]), default="file", show_default=True,
              help="file: each log is a run; dir: the logs of one directory are one run (ranks, nodes, parts)")
@friendly
def ingest_command(
    paths: tuple[str, ...], out: str, jobs: int, dask_scheduler: str | None, engine: str, group: str,
) -> None:
    """Parse many logs (files, directories, globs, .gz) into a Parquet store, one partition per run and
    event kind, with a runs table; files already in the store (same content) are skipped. Read it with
    logscope.open_store(OUT), polars or DuckDB."""
    from logscope.render.progress import RunsProgress
    from logscope.store.ingest import ingest, ingest_dask

    if dask_scheduler and jobs != 1:
        raise click.UsageError("--jobs and --dask-scheduler exclude each other (Dask decides the parallelism)")
    with RunsProgress() as bar:
        progress = bar if sys.stderr.isatty() else None
        if dask_scheduler:
            summary = ingest_dask(list(paths), out, scheduler=dask_scheduler, engine=engine, group=group,
                                  progress=progress, check=False)
        else:
            summary = ingest(list(paths), out, jobs=jobs, engine=engine, group=group, progress=progress, check=False)
    for files, error in summary.failed:
        click.echo(f"logscope: failed: {files}: {error}", err=True)
    click.echo(f"logscope: {summary.text()}", err=True)
    if summary.failed:
        sys.exit(1)


@main.command("doctor")
def doctor_command() -> None:
    """What this install runs with: the scanner (Hyperscan or the pure-Python fallback), the optional
    pieces, and the command that installs the faster or missing ones."""
    from logscope.doctor import report

    click.echo(report())


@main.command("rules")
@click.argument("code", required=False)
@friendly
def rules_command(code: str | None) -> None:
    """The digest rules; with CODE (e.g. KV01, or a slug), that rule's documentation."""
    from logscope.digest import get_rule
    from logscope.digest.docs import rule_page, rules_table

    if code is None:
        click.echo(rules_table())
        return
    try:
        cls = get_rule(code)
    except KeyError:
        raise LogscopeError(f"there is no rule {code!r}; `logscope rules` lists them") from None
    click.echo(rule_page(cls), nl=False)


if __name__ == "__main__":  # pragma: no cover
    main()
