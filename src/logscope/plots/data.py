"""What the plots are fed: a run's report plus the decode-rate series behind it.

The report holds the analyses' numbers (stable segment bounds, chunk series, acceptance per
position, cold-start phases, disturbances); the time series and the times of the cold-start lines
come from the analyses' own series and the run's events. Nothing here imports matplotlib.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from logscope.analyses.base import RunData, RunLike, is_gap
from logscope.analyses.report import Report
from logscope.analyses.series import Sample, decode_series, summed

_STARTUP_KINDS = frozenset(
    {
        "model_load",
        "compile",
        "memory_profile",
        "kv_cache_pool",
        "graph_capture",
        "engine_init",
        "scheduler_limits",
        "server_ready",
        "max_concurrency",
        "server_start",
    }
)


@dataclass(frozen=True)
class Window:
    """One window of a decode-rate series (ending at ``t_s``)."""

    t_s: float
    gen_tok_s: float
    running: int
    prompt_tok_s: float | None = None
    waiting: int | None = None
    kv_usage_pct: float | None = None
    prefill: bool | None = None
    gap_before: bool = False

    @classmethod
    def of(cls, s: Sample, gap_before: bool) -> Window:
        return cls(
            t_s=s.t_s,
            gen_tok_s=s.gen_tok_s,
            running=s.running,
            prompt_tok_s=s.prompt_tok_s,
            waiting=s.waiting,
            kv_usage_pct=s.kv_usage_pct,
            prefill=s.prefill,
            gap_before=gap_before,
        )


@dataclass(frozen=True)
class EngineSeries:
    label: str
    source: str
    interval_s: float | None
    windows: list[Window]


@dataclass
class PlotInput:
    """One run as the plots see it."""

    label: str
    report: Report
    series: EngineSeries | None = None
    engines: list[EngineSeries] = field(default_factory=list)
    line_times: dict[int, float] = field(default_factory=dict)
    prefill_points: list[tuple[float, float]] = field(default_factory=list)  # SGLang (t_s, input tok/s)

    @classmethod
    def of(cls, run: RunLike | RunData, report: Report, label: str | None = None) -> PlotInput:
        data = RunData.of(run)
        series = decode_series(data)
        main = summed(series) or (series[0] if series else None)
        engines = (
            [_engine(s.label, s.source, s.interval, s.samples) for s in series] if len(series) > 1 else []
        )
        times: dict[int, float] = {}
        first_file = data.files[0] if data.files else None
        for seq in data.seqs(*_STARTUP_KINDS):  # the start-up lines only, in run order
            e = data.events[seq]
            if e.t_s is not None and (first_file is None or e.file == first_file):
                times.setdefault(e.line, e.t_s)
        pf = data.frame("prefill_batch")
        ready = data.ready_seq()
        t_ready = data.time_at(ready) if ready is not None else None
        points = (
            [
                (float(t), float(v))
                for t, v in zip(pf["t_s"].to_list(), pf["input_tok_s"].to_list(), strict=True)
                if t is not None and v is not None and (t_ready is None or t >= t_ready)
            ]
            if pf.height
            else []
        )
        name = label or (data.files[0].rsplit("/", 1)[-1] if data.files else "run")
        return cls(
            label=name,
            report=report,
            series=_engine(main.label, main.source, main.interval, main.samples)
            if main is not None
            else None,
            engines=engines,
            line_times=times,
            prefill_points=points,
        )


def _engine(label: str, source: str, interval: float | None, samples: list[Sample]) -> EngineSeries:
    iv = interval or 10.0
    wins = [Window.of(s, i > 0 and is_gap(s.t_s - samples[i - 1].t_s, iv)) for i, s in enumerate(samples)]
    return EngineSeries(label=label, source=source, interval_s=interval, windows=wins)
