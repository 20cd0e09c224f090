"""Small event lists for the analyses' unit tests (no log text needed)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from logscope.analyses.base import RunData
from logscope.events import DecodeBatch, Event, PrefillBatch, Throughput


def stats(
    rows: Iterable[Sequence[Any]],
    *,
    start_line: int = 100,
    interval: float = 10.0,
    t0: float = 60.0,
    engine_index: int | None = 0,
) -> list[Event]:
    """vLLM stats events from rows of (prompt_tok_s, gen_tok_s, running[, waiting[, dt]])."""
    out: list[Event] = []
    t = t0
    for k, row in enumerate(rows):
        prompt, gen, running = row[0], row[1], row[2]
        waiting = row[3] if len(row) > 3 else 0
        if len(row) > 4:
            t += row[4] - interval
        out.append(
            Throughput(
                engine="vllm",
                file="t.log",
                line=start_line + k,
                t_s=t,
                prompt_tok_s=prompt,
                gen_tok_s=gen,
                running=running,
                waiting=waiting,
                engine_index=engine_index,
            )
        )
        t += interval
    return out


def run(events: list[Event], engine: str = "vllm", *, ordered: bool = False) -> RunData:
    """A run of ``events``, sorted by time (then line) unless ``ordered`` says they are in log order."""
    if not ordered:
        events = sorted(events, key=lambda e: (e.t_s if e.t_s is not None else -1.0, e.line))
    return RunData(events=events, engine=engine, files=["t.log"])


def sglang(rows: Iterable[tuple[str, float, dict[str, Any]]], start_line: int = 100) -> list[Event]:
    """SGLang events from (kind, t_s, fields) with kind "d" (decode) or "p" (prefill)."""
    out: list[Event] = []
    for k, (kind, t, f) in enumerate(rows):
        common = {"engine": "sglang", "file": "s.log", "line": start_line + k, "t_s": t, "tp_rank": 0}
        if kind == "d":
            out.append(DecodeBatch(**common, queue=0, **f))
        else:
            out.append(PrefillBatch(**common, cached_token=0, queue=0, **f))
    return out
