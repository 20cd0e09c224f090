"""The ``logscope`` command line: arguments -> api -> renderer -> exit code.

The only module that imports click. Errors reach the user as one sentence on stderr, never as a
traceback. Exit codes: ``logscope.exits`` (0 pass, 1 a gate warns, 2 a gate fails, 3 no result:
unreadable or missing input, or a usage error).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click

from logscope import exits
from logscope.errors import LogscopeError
from logscope.events import KINDS, Event

F = TypeVar("F", bound=Callable[..., Any])

ENGINE_CHOICE = click.Choice(["auto", "vllm", "sglang"])
FAIL_ON_CHOICE = click.Choice(["error", "warning", "never"])
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
            sys.exit(exits.NO_RESULT)
        except BrokenPipeError:
            sys.exit(0)

    return wrapper  # type: ignore[return-value]


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from logscope.doctor import version_line

    click.echo(version_line())
    ctx.exit()


class _Group(click.Group):
    """Usage errors exit with ``exits.NO_RESULT`` (3), not click's 2: 2 means a gate failed (``logscope.exits``)."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except click.UsageError as exc:
            setattr(exc, "exit_code", exits.NO_RESULT)  # noqa: B010 (click declares it a class variable)
            raise

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            setattr(exc, "exit_code", exits.NO_RESULT)  # noqa: B010
            raise


class _Runs(click.Command):
    """``--base A1 A2 --other B1 B2``: the values after ``--base`` / ``--other`` up to the next option
    are each one run (click's options take one value each; this repeats the option for each)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        out: list[str] = []
        cur: str | None = None
        for a in args:
            if a in ("--base", "--other"):
                cur = a
                out.append(a)
                continue
            if cur is not None and not a.startswith("-"):
                if out[-1] != cur:
                    out.append(cur)
                out.append(a)
                continue
            cur = None
            out.append(a)
        return super().parse_args(ctx, out)


def _gate_modes(fn: F) -> F:
    """``--strict``, ``--best-effort`` and ``--shadow`` (the exit-code contract: ``logscope.exits``)."""
    fn = click.option(
        "--shadow",
        is_flag=True,
        help="report-only gates: print every verdict and exit 0 whatever they say (3 stays 3)",
    )(fn)
    fn = click.option(
        "--best-effort",
        "best_effort",
        is_flag=True,
        help="report on what could be read: inputs that are missing or cannot be opened are left out "
        "with a note (exit 3 only when nothing is left)",
    )(fn)
    fn = click.option(
        "--strict",
        is_flag=True,
        help="exit 3 when a required input is missing: a --bench or --metrics file that gives nothing, "
        "a gate or a compared metric without a value",
    )(fn)
    return fn


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and the scanner in use, and exit (more: logscope doctor).",
)
def main() -> None:
    """Forensics for vLLM and SGLang server logs."""


def _stream(
    paths: tuple[str, ...], engine: str, keep_unparsed: bool, jobs: int = 1
) -> tuple[Iterator[Event], Any]:
    from logscope.api import iter_events
    from logscope.parsers.framing import ReadStats

    stats = ReadStats()
    return iter_events(list(paths), engine, keep_unparsed=keep_unparsed, stats=stats, jobs=jobs), stats


@main.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("--engine", type=ENGINE_CHOICE, default="auto", show_default=True)
@click.option(
    "--kind", "kinds", multiple=True, type=click.Choice(KINDS), help="only these kinds (repeatable)"
)
@click.option(
    "--format", "fmt", type=click.Choice(["jsonl", "csv", "parquet"]), default="jsonl", show_default=True
)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write here instead of stdout")
@click.option("--include-unparsed", is_flag=True, help="also emit the lines no grammar understood")
@click.option("--with-raw", is_flag=True, help="include each event's raw text")
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="parse several files at once in this many processes (same output as one process)",
)
@friendly
def events(
    logs: tuple[str, ...],
    engine: str,
    kinds: tuple[str, ...],
    fmt: str,
    output: str | None,
    include_unparsed: bool,
    with_raw: bool,
    jobs: int,
) -> None:
    """The typed events of LOGS (files, .gz, directories, - for stdin)."""
    want = set(kinds)
    keep_unparsed = include_unparsed or "unparsed" in want
    if (
        fmt == "jsonl"
        and jobs > 1
        and _events_lines(logs, engine, want, keep_unparsed, output, with_raw, jobs)
    ):
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
    logs: tuple[str, ...],
    engine: str,
    want: set[str],
    keep_unparsed: bool,
    output: str | None,
    with_raw: bool,
    jobs: int,
) -> bool:
    """``events --format jsonl --jobs N`` on one big file: the workers write the JSON lines (the same
    bytes). False when the input is not one file worth cutting."""
    from logscope.api import iter_event_lines
    from logscope.parsers.framing import ReadStats
    from logscope.render.jsonl import NumberedLines, write_lines

    stats = ReadStats()
    pairs = iter_event_lines(
        list(logs), engine, keep_unparsed=keep_unparsed, stats=stats, jobs=jobs, lines=NumberedLines(with_raw)
    )
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
@click.option(
    "--format",
    "fmt",
    type=ANALYZE_FORMAT_CHOICE,
    default="text",
    show_default=True,
    help="text: terminal tables; markdown: for a ticket (fits a GitHub comment); json: the keys of docs/contract.md; "
    "html: one self-contained page with the figures; br: llm-d's benchmark report (BR v0.2) as JSON",
)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False), help="write the report here instead of stdout"
)
@click.option(
    "--plots",
    "plots_dir",
    type=click.Path(file_okay=False),
    help="also write the figures into this directory, as PNG and SVG",
)
@click.option(
    "--fail-on",
    type=FAIL_ON_CHOICE,
    default="never",
    show_default=True,
    help="a gate on the findings (for CI): exit 2 when an error finding is at or above this severity, 1 when "
    "only warnings are",
)
@click.option(
    "--bench",
    "bench_files",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="a benchmark client's output of this run (vllm bench serve / sglang bench_serving text or "
    "JSON, AIPerf profile_export*.json/.csv/.jsonl, GuideLLM benchmarks.json/.yaml, genai-bench run "
    "JSON, inference-perf lifecycle JSON, an llm-d benchmark report): its figures are checked "
    "against the engine log (repeatable)",
)
@click.option(
    "--metrics",
    "metrics_files",
    multiple=True,
    type=click.Path(exists=True),
    help="the server's saved Prometheus /metrics scrapes of this run: one scrape, a file of scrapes each after "
    "a `# scrape_time <unix s>` line, or a folder of scrape files (repeatable)",
)
@click.option(
    "--slo",
    "slo",
    metavar="GATES",
    help="latency and error gates, e.g. 'ttft_p95<=2s,tpot_p95<=50ms,error_rate<=1%%' (ttft, tpot, itl, e2e, "
    "queue with _mean/_p50/_p90/_p95/_p99; error_rate): each is checked against the client (--bench), "
    "else the metrics (--metrics); exit 2 when one fails, 1 when one is unknown (3 with --strict)",
)
@click.option(
    "--follow",
    is_flag=True,
    help="watch LOG grow (rotation and truncation handled): a live view and new findings on stderr; "
    "Ctrl-C prints the final report",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.1),
    default=2.0,
    show_default=True,
    help="with --follow: seconds between refreshes",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="parse each big LOG in ranges over this many processes (the same report as one process)",
)
@click.option(
    "--lifetime",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="when the input holds several server lifetimes (restarts, appended logs, a folder of runs): "
    "report on lifetime N (numbered from 1, listed in the report); default: the last one that "
    "served traffic. Findings of every lifetime are kept",
)
@_gate_modes
@friendly
def analyze(
    logs: tuple[str, ...],
    engine: str,
    fmt: str,
    output: str | None,
    plots_dir: str | None,
    fail_on: str,
    bench_files: tuple[str, ...],
    follow: bool,
    interval: float,
    jobs: int,
    lifetime: int | None,
    metrics_files: tuple[str, ...],
    slo: str | None,
    strict: bool,
    best_effort: bool,
    shadow: bool,
) -> None:
    """Report of one run (several LOGS are one run: ranks, nodes, rotated parts). Exit codes: 0 every gate
    (--fail-on, --slo) passes, 1 one warns, 2 one fails, 3 no result (unreadable or missing input, a usage
    error); --shadow: always 0 but for 3 (docs/contract.md)."""
    from logscope.render.formats import check_outputs, emit_report, run_figures

    _modes(strict, best_effort)
    check_outputs(output, plots_dir)
    if best_effort:
        logs = _readable(logs)
        bench_files = _readable(bench_files, required=False)
        metrics_files = _readable(metrics_files, required=False)
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
            raise click.UsageError(
                "--follow takes no --bench: analyze the finished run with its client's output"
            )
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
    code = exits.PASS
    if fail_on != "never":
        code = max(code, _findings_code(report.findings, fail_on))
    if report.slo is not None:
        code = max(code, _slo_code(report.slo, strict))
    if strict:
        code = max(code, _missing_inputs(report, bench_files, metrics_files))
    _exit(code, shadow)


def _modes(strict: bool, best_effort: bool) -> None:
    if strict and best_effort:
        raise click.UsageError("--strict and --best-effort exclude each other")


def _readable(paths: tuple[str, ...], required: bool = True) -> tuple[str, ...]:
    """``--best-effort``: the paths that exist and can be opened (or ``-``); a note for each left out."""
    import os

    keep = []
    for p in paths:
        if p == "-" or (os.path.exists(p) and os.access(p, os.R_OK)):
            keep.append(p)
        else:
            click.echo(f"logscope: note: --best-effort: left out {p}: missing or cannot be opened", err=True)
    if required and paths and not keep:
        raise LogscopeError("--best-effort: none of the inputs could be opened")
    return tuple(keep)


def _exit(code: int, shadow: bool) -> None:
    if code == exits.PASS:
        return
    if shadow and code != exits.NO_RESULT:
        click.echo(f"logscope: --shadow: the gates say exit {code}; exiting 0.", err=True)
        return
    sys.exit(code)


def _slo_code(slo: Any, strict: bool) -> int:
    """Each gate on stderr with its value and source; 2 when one fails, 1 when one is unknown (3 with
    ``--strict``: its input is missing)."""
    for ck in slo.checks:
        click.echo(
            f"logscope: SLO {ck.status.upper()}: {ck.detail}"
            + (f" [source: {ck.source}]" if ck.source else ""),
            err=True,
        )
    if not slo.passed:
        click.echo(
            f"logscope: SLO: {slo.failed} gate(s) failed, {slo.unknown} unknown (unknown is not a pass).",
            err=True,
        )
    if slo.failed:
        return exits.FAIL
    if slo.unknown:
        return exits.NO_RESULT if strict else exits.WARN
    return exits.PASS


def _findings_code(findings: list[Any], level: str) -> int:
    """2 when a finding at error severity is at or above ``level``, 1 when only warnings are; one
    sentence on stderr."""
    from logscope.digest import at_or_above

    failing = at_or_above(findings, level)
    if not failing:
        return exits.PASS
    codes = ", ".join(sorted({f.code for f in failing}))
    click.echo(f"logscope: {len(failing)} finding(s) at or above {level}: {codes}.", err=True)
    return exits.FAIL if any(f.severity == "error" for f in failing) else exits.WARN


def _missing_inputs(report: Any, bench_files: tuple[str, ...], metrics_files: tuple[str, ...]) -> int:
    """``--strict``: 3 when a --bench file gave no client result or --metrics gave no metrics."""
    missing = []
    if bench_files and report.bench is None:
        missing.append(f"--bench {', '.join(bench_files)} gave no client result")
    if metrics_files and report.metrics is None:
        missing.append(f"--metrics gave nothing ({report.not_applicable.get('metrics', 'no scrape')})")
    for m in missing:
        click.echo(f"logscope: --strict: {m}.", err=True)
    return exits.NO_RESULT if missing else exits.PASS


def _load_run(paths: list[str], engine: str, jobs: int = 1) -> Any:
    """``api.load`` with a progress bar on stderr for large inputs (only on a terminal)."""
    from logscope.api import load_for_report
    from logscope.parsers.framing import ReadStats
    from logscope.render.progress import reading_progress

    stats = ReadStats()
    with reading_progress(paths, stats):
        return load_for_report(paths, engine, stats=stats, jobs=jobs)


@main.command("compare", cls=_Runs)
@click.argument("base", required=False)
@click.argument("other", required=False)
@click.option(
    "--base",
    "base_runs",
    multiple=True,
    metavar="RUN...",
    help="BASE's runs (repeats of one setup): log files, each one run with the client results beside it "
    "(same name stem), or a folder whose *.log files are each one run; the runs are the verdicts' "
    "samples. Instead of BASE OTHER, with --other",
)
@click.option("--other", "other_runs", multiple=True, metavar="RUN...", help="OTHER's runs, as --base")
@click.option("--engine", type=ENGINE_CHOICE, default="auto", show_default=True)
@click.option("--label", "labels", multiple=True, help="a name for BASE, then (given again) for OTHER")
@click.option(
    "--format",
    "fmt",
    type=ANALYZE_FORMAT_CHOICE,
    default="text",
    show_default=True,
    help="text, markdown, json (with the verdicts), html; br: each run's llm-d benchmark report (BR v0.2), "
    "a JSON array, BASE's runs first",
)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False), help="write the comparison here instead of stdout"
)
@click.option(
    "--plots",
    "plots_dir",
    type=click.Path(file_okay=False),
    help="also write the overlay figures into this directory, as PNG and SVG",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="parse each big log in ranges over this many processes (the same comparison as one process)",
)
@click.option(
    "--bench",
    "bench_files",
    nargs=2,
    type=click.Path(dir_okay=False),
    default=None,
    metavar="BASE_CLIENT OTHER_CLIENT",
    help="the benchmark clients' outputs (text or --save-result JSON) of BASE and of OTHER: their workloads "
    "are compared (not an A/B test when output length, prompts, concurrency or rate differ) and their "
    "latencies set side by side with verdicts",
)
@click.option(
    "--metrics",
    "metrics_files",
    nargs=2,
    type=click.Path(exists=True),
    default=None,
    metavar="BASE_SCRAPES OTHER_SCRAPES",
    help="the servers' saved Prometheus /metrics scrapes of BASE and of OTHER: latency percentiles side by "
    "side (where no client result gives them)",
)
@click.option(
    "--threshold",
    default="5%",
    show_default=True,
    metavar="PCT",
    help="the verdicts' threshold: OTHER worse than BASE by more than this fails (5%, 5 or 0.05)",
)
@_gate_modes
@friendly
def compare_command(
    base: str | None,
    other: str | None,
    base_runs: tuple[str, ...],
    other_runs: tuple[str, ...],
    engine: str,
    labels: tuple[str, ...],
    fmt: str,
    output: str | None,
    plots_dir: str | None,
    jobs: int,
    bench_files: tuple[str, str] | None,
    metrics_files: tuple[str, str] | None,
    threshold: str,
    strict: bool,
    best_effort: bool,
    shadow: bool,
) -> None:
    """Two runs side by side: BASE and OTHER (each a log file, .gz or directory), how much slower OTHER decodes
    (BASE / OTHER of the stable decode rate, by mean, median and peak), and a verdict per headline metric (PASS,
    FAIL, INCONCLUSIVE against --threshold, with a 90 % interval). Several runs per side: --base A1 A2 --other
    B1 B2. Exit codes: 0 every verdict passes, 1 one is inconclusive, 2 one fails, 3 no result (unreadable or
    missing input, a usage error); --shadow: always 0 but for 3 (docs/contract.md)."""
    from logscope.analyses.compare import compare_runs
    from logscope.analyses.verdict import parse_threshold
    from logscope.render.formats import check_outputs, compare_figures, emit_compare

    _modes(strict, best_effort)
    if len(labels) > 2:
        raise click.UsageError("--label is given at most twice: BASE's name, then OTHER's")
    try:
        threshold_pct = parse_threshold(threshold)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--threshold") from None
    if base_runs or other_runs:
        if base is not None or not (base_runs and other_runs):
            raise click.UsageError("give BASE OTHER, or --base RUN... and --other RUN... (not both)")
        if bench_files or metrics_files:
            raise click.UsageError(
                "with --base/--other, each run's client results and scrapes sit beside its log "
                "(same name stem); --bench and --metrics are for BASE OTHER"
            )
        groups_b, groups_o = _run_groups(base_runs, best_effort), _run_groups(other_runs, best_effort)
    else:
        if base is None or other is None:
            raise click.UsageError("give BASE OTHER, or --base RUN... and --other RUN...")
        clients = [[f] for f in bench_files] if bench_files else [[], []]
        scrapes = [[f] for f in metrics_files] if metrics_files else [[], []]
        groups_b, groups_o = [([base, *clients[0]], scrapes[0])], [([other, *clients[1]], scrapes[1])]
    check_outputs(output, plots_dir)
    # each run's last lifetime that served traffic (an input may hold several: restarts, appended logs)
    runs_b = [_load_run(files, engine, jobs).lifetime() for files, _ in groups_b]
    runs_o = [_load_run(files, engine, jobs).lifetime() for files, _ in groups_o]
    cmp = compare_runs(
        runs_b,
        runs_o,
        labels=list(labels) or None,
        threshold_pct=threshold_pct,
        metrics=([m for _, m in groups_b], [m for _, m in groups_o]),
    )
    plots, written = compare_figures(runs_b[0], runs_o[0], cmp, fmt, plots_dir)
    emit_compare(cmp, fmt, output, plots)
    if written:
        click.echo(f"logscope: wrote {len(written) // 2} figure(s) to {plots_dir} (PNG and SVG)", err=True)
    _exit(_verdict_code(cmp, strict, bench_files, metrics_files), shadow)


def _verdict_code(cmp: Any, strict: bool, bench_files: Any, metrics_files: Any) -> int:
    """The comparison's verdict on stderr and its code (``exits.VERDICT_CODES``); with ``--strict``, 3 when a
    client or metrics input gave nothing or a metric is measured on one side only."""
    v = cmp.verdicts
    click.echo(f"logscope: verdict {v.verdict}: {v.reason} (threshold {v.threshold_pct:g} %).", err=True)
    code = exits.VERDICT_CODES[v.verdict]
    if strict:
        missing = [f"{m.metric}: {m.reason}" for m in v.metrics if m.base is None or m.other is None]
        for role in ("base", "other"):
            sec = cmp.sections.get("bench", {}).get(role)
            if bench_files and sec is None:
                missing.append(f"--bench gave no client result for {role.upper()}")
            if metrics_files and role in cmp.not_applicable.get("metrics", {}):
                missing.append(
                    f"--metrics gave nothing for {role.upper()}: {cmp.not_applicable['metrics'][role]}"
                )
        if not v.metrics:
            missing.append("no metric both runs measure")
        for m in missing:
            click.echo(f"logscope: --strict: {m}.", err=True)
        if missing:
            code = exits.NO_RESULT
    return code


_LOG_SUFFIXES = (".log", ".log.gz")
_SCRAPES = (".scrapes.", ".metrics.", "_metrics.", "_scrapes.")


def _run_groups(items: tuple[str, ...], best_effort: bool) -> list[tuple[list[str], list[str]]]:
    """Each run of a side: (its files: the log and the client results beside it, its metrics scrapes).
    An item is a log file (a run), a folder (each ``*.log``/``*.log.gz`` in it a run), or a client result
    or scrape file of a run given too (joined to the log whose name stem it starts with)."""
    import os

    def beside(
        log: str,
    ) -> list[str]:  # the files of its folder named after its stem: X.client.json, X_client.txt
        d, stem = os.path.split(log)
        stem = stem.removesuffix(".gz").removesuffix(".log")
        return sorted(
            os.path.join(d, f)
            for f in os.listdir(d or ".")
            if f.startswith((stem + ".", stem + "_"))
            and not f.endswith(_LOG_SUFFIXES)
            and os.path.isfile(os.path.join(d, f))
        )

    files: list[str] = []
    for it in items:
        if os.path.isdir(it):
            files += sorted(
                os.path.join(it, f) for f in os.listdir(it) if os.path.isfile(os.path.join(it, f))
            )
        elif best_effort and not (os.path.exists(it) and os.access(it, os.R_OK)):
            click.echo(f"logscope: note: --best-effort: left out {it}: missing or cannot be opened", err=True)
        else:
            files.append(it)
            if it.endswith(_LOG_SUFFIXES) and os.path.isfile(it):
                files += [f for f in beside(it) if f not in files and f not in items]
    logs = [f for f in files if f.endswith(_LOG_SUFFIXES)] or [f for f in files if os.path.isfile(f)][:1]
    groups: dict[str, tuple[list[str], list[str]]] = {f: ([f], []) for f in logs}
    stems = sorted(
        ((os.path.basename(f).removesuffix(".gz").removesuffix(".log"), f) for f in logs),
        key=lambda x: -len(x[0]),
    )
    for f in files:
        if f in groups:
            continue
        name = os.path.basename(f)
        owner = next((log for stem, log in stems if name.startswith((stem + ".", stem + "_"))), None)
        if owner is None:
            if any(f == it for it in items):
                raise LogscopeError(
                    f"{f}: no log of this side has its name stem; name it after its run's log"
                )
            continue  # a folder's other file
        (groups[owner][1] if any(x in name for x in _SCRAPES) else groups[owner][0]).append(f)
    if not groups:
        raise LogscopeError(f"no run in {', '.join(items)}")
    return list(groups.values())


@main.command("metrics")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--log",
    "logs",
    multiple=True,
    type=click.Path(exists=True),
    help="the server log of the same run: its stats lines are cross-checked against the counters",
)
@click.option("--engine", type=ENGINE_CHOICE, default="auto", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write here instead of stdout")
@friendly
def metrics_command(
    files: tuple[str, ...], logs: tuple[str, ...], engine: str, fmt: str, output: str | None
) -> None:
    """Saved Prometheus /metrics scrapes (FILES: one scrape, a file of scrapes each after a `# scrape_time <unix s>`
    line, or a folder of scrape files): counter rates, gauges, latency quantiles from the histograms."""
    from logscope.analyses.base import NotApplicable
    from logscope.analyses.metrics import ANALYSED, metrics_section
    from logscope.parsers.prometheus import read_metrics

    events = _load_run(list(logs), engine).events if logs else []
    res = metrics_section(read_metrics(list(files), ANALYSED), events)
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

    blocks = [
        Heading(1, (t("logscope metrics: " + ", ".join(f.rsplit("/", 1)[-1] for f in files)),), "top"),
        *metrics_blocks(res, 0),
    ]
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            render_blocks(blocks, Console(file=fh, width=120, color_system=None))
    else:
        render_blocks(blocks, Console())


@main.command("ingest")
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(file_okay=False),
    help="the store directory (made when missing; an existing store is added to)",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="parse with this many local processes",
)
@click.option(
    "--dask-scheduler",
    "dask_scheduler",
    metavar="ADDRESS",
    help="run the per-run work as Dask tasks on this scheduler (needs logscope[dask]; the workers "
    "must see the logs and the store at the same paths)",
)
@click.option("--engine", type=ENGINE_CHOICE, default="auto", show_default=True)
@click.option(
    "--group",
    type=click.Choice(["file", "dir"]),
    default="file",
    show_default=True,
    help="file: each log is a run; dir: the logs of one directory are one run (ranks, nodes, parts)",
)
@friendly
def ingest_command(
    paths: tuple[str, ...],
    out: str,
    jobs: int,
    dask_scheduler: str | None,
    engine: str,
    group: str,
) -> None:
    """Parse many logs (files, directories, globs, .gz) into a Parquet store, one partition per run and
    event kind, with a runs table; files already in the store (same content) are skipped. Read it with
    logscope.open_store(OUT), polars or DuckDB."""
    from logscope.render.progress import RunsProgress
    from logscope.store.ingest import ingest, ingest_dask

    if dask_scheduler and jobs != 1:
        raise click.UsageError(
            "--jobs and --dask-scheduler exclude each other (Dask decides the parallelism)"
        )
    with RunsProgress() as bar:
        progress = bar if sys.stderr.isatty() else None
        if dask_scheduler:
            summary = ingest_dask(
                list(paths),
                out,
                scheduler=dask_scheduler,
                engine=engine,
                group=group,
                progress=progress,
                check=False,
            )
        else:
            summary = ingest(
                list(paths), out, jobs=jobs, engine=engine, group=group, progress=progress, check=False
            )
    for files, error in summary.failed:
        click.echo(f"logscope: failed: {files}: {error}", err=True)
    click.echo(f"logscope: {summary.text()}", err=True)
    if summary.failed:
        sys.exit(1)


@main.command("doctor")
def doctor_command() -> None:
    """What this install runs with: the scanner (Hyperscan, or the polars / pure-Python fallback), the optional
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
