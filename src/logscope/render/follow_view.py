"""The ``logscope analyze --follow`` view: a rich Live panel over a ``Follower``'s snapshots on a
terminal (plain lines elsewhere), new findings printed as they appear, Ctrl-C ends it.

Kept apart from ``logscope.follow`` (which reads and analyses a growing log) so that the reading layer
never imports rich or knows about terminals.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from logscope.errors import UnreadableInput
from logscope.follow import Follower, Snapshot

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from logscope.analyses.report import Report
    from logscope.api import Run
    from logscope.digest.finding import Finding


def _num(x: float | None, fmt: str = ",.1f") -> str:
    return "-" if x is None else format(x, fmt)


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n} bytes"


def live_panel(snap: Snapshot, interval: float) -> RenderableType:
    """The Live view of a snapshot: what was read, the latest stats line, stable decode, findings."""
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    rep = snap.report
    version = rep.engine_version if rep is not None else None
    engine = " ".join(x for x in (snap.engine, version) if x) or "engine not known yet"
    grid.add_row("log", Text(f"{snap.path}  ({engine})"))
    if not snap.exists and snap.lines == 0:
        grid.add_row("", Text("waiting for the file to appear", style="yellow"))
    moved = []
    if snap.rotations:
        moved.append(f"{snap.rotations} rotation(s)")
    if snap.truncations:
        moved.append(f"{snap.truncations} truncation(s)")
    grid.add_row(
        "read",
        Text(
            f"{snap.lines:,} lines, {_size(snap.bytes)}, {snap.events:,} events"
            + (f", {', '.join(moved)}" if moved else "")
        ),
    )
    stats = snap.last.get("throughput") or snap.last.get("decode_batch")
    if stats is not None:
        d = stats.model_dump()
        kv = d.get("gpu_kv_cache_pct")
        if kv is None and d.get("token_usage") is not None:
            kv = 100 * float(d["token_usage"])
        grid.add_row(
            "latest",
            Text(
                f"{_num(d.get('gen_tok_s'))} tok/s generated, {d.get('running')} running, "
                f"{d.get('waiting', d.get('queue'))} waiting, KV {_num(kv)}%  (line {stats.line}, {stats.time or '-'})"
            ),
        )
    sd = rep.stable_decode if rep is not None else None
    if sd is not None:
        grid.add_row(
            "stable decode",
            Text(
                f"{_num(sd.mean_tok_s)} tok/s mean, {_num(sd.median_tok_s)} median over {sd.samples} windows at "
                f"{sd.concurrency} running ({_num(sd.per_request_tok_s)} tok/s per request)"
            ),
        )
    elif rep is not None:
        grid.add_row("stable decode", Text(rep.not_applicable.get("stable_decode", "-"), style="dim"))
    if rep is not None:
        sev = [f.severity for f in rep.findings]
        codes = ", ".join(sorted({f.code for f in rep.findings})) or "none"
        grid.add_row(
            "findings",
            Text(
                f"{sev.count('error')} error, {sev.count('warning')} warning, "
                f"{sev.count('info')} info: {codes}"
            ),
        )
    grid.add_row(
        "",
        Text(
            f"updated {time.strftime('%H:%M:%S')}, every {interval:g} s; Ctrl-C for the final report",
            style="dim",
        ),
    )
    return Panel(grid, title="logscope analyze --follow", title_align="left", border_style="cyan")


def finding_line(f: Finding) -> Any:
    """One line announcing a new finding (log text kept literal, never read as markup)."""
    from rich.text import Text

    from logscope.render.terminal import SEVERITY_STYLE

    where = f" ({f.evidence[0].file}:{f.evidence[0].line})" if f.evidence else ""
    return Text.assemble(
        (time.strftime("%H:%M:%S"), "dim"),
        " new ",
        (f" {f.severity.upper()} ", SEVERITY_STYLE.get(f.severity, "reverse")),
        " ",
        (f.code, "bold cyan"),
        " ",
        (f.title, "bold"),
        where,
    )


def follow_terminal(
    path: str,
    engine: str | None,
    interval: float,
    console: Console | None = None,
    stop: threading.Event | None = None,
) -> tuple[Run, Snapshot]:
    """Follow ``path`` until Ctrl-C (or ``stop``), showing it on ``console`` (stderr by default): a Live
    panel on a terminal, plain lines elsewhere; new findings are printed as they appear. Returns the
    run and the final snapshot (``close()``'s)."""
    from rich.console import Console
    from rich.live import Live

    con = console if console is not None else Console(stderr=True)
    stop = stop if stop is not None else threading.Event()
    follower = Follower(path, engine)
    rotations = truncations = 0

    def announce(snap: Snapshot, printer: Any) -> None:
        nonlocal rotations, truncations
        if snap.rotations != rotations or snap.truncations != truncations:
            printer(
                f"{time.strftime('%H:%M:%S')} {path}: "
                + ("rotated" if snap.rotations != rotations else "truncated")
                + "; reading the new content"
            )
            rotations, truncations = snap.rotations, snap.truncations
        for f in snap.new_findings:
            printer(finding_line(f))

    try:
        if con.is_terminal:
            with Live(console=con, refresh_per_second=4, transient=False) as live:
                live.update(_reading(path))
                while True:
                    snap = follower.poll()
                    announce(snap, live.console.print)
                    live.update(live_panel(snap, interval))
                    if stop.wait(interval):
                        break
        else:
            con.print(f"logscope: following {path}; Ctrl-C (SIGINT) prints the final report", highlight=False)
            while True:
                announce(follower.poll(), con.print)
                if stop.wait(interval):
                    break
    except KeyboardInterrupt:
        pass
    final = follower.close()
    announce(final, con.print)
    if final.lines == 0 or follower.stats.text_lines == 0:
        raise UnreadableInput(
            f"{path}: nothing was read" if not final.exists else f"{path}: no text was read"
        )
    return follower.run(), final


def _reading(path: str) -> RenderableType:
    from rich.text import Text

    return Text(f"logscope: reading {path} ...", style="dim")


def follow_log(path: str, engine: str | None = "auto", interval: float = 2.0) -> tuple[Run, Report]:
    """``logscope analyze --follow``: follow until Ctrl-C, then the run and its final report."""
    run, final = follow_terminal(path, engine, interval)
    if final.report is None:  # pragma: no cover - close() analyses whenever there are events
        raise UnreadableInput(f"{path}: no events were read")
    return run, final.report
