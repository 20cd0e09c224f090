"""The report checks itself: a benchmark client's figures against the engine's own, and against each other.

Three checks, each naming what a failure points to (after inference-perf's self-validation):

* **token accounting**: the client's output tokens against the tokens the engine generated over the
  run's span. The span is the busy stretch of the log (consecutive decode windows, separated by idle)
  whose length matches the client's duration; of several alike, the one the client's own clock falls
  in (AIPerf's and GuideLLM's start and end times, vLLM's ``--save-result`` ``date``; naive local
  times, as the log prints them); with none or still several, the check is not applicable and says
  why. Engine tokens: vLLM, each stats window's generation throughput × the
  logging interval (the window's tokens, up to rounding of the printed rate); SGLang, each ``Decode
  batch`` line's running requests × the decode steps between two lines (``decode_log_interval``,
  estimated from the lines' rates and times and rounded, since every running request gains one token
  a step), or the rate × the time between lines when speculative decoding makes a step yield
  several tokens. On the shared corpus both agree with the clients' totals within 1.5 % (vLLM within
  0.1 %), so a gap beyond ``ACCOUNTING_TOLERANCE`` is the client's: a real inference-perf run against
  vLLM (fixtures/bench/clients/capture) counted 8,739 output tokens by retokenizing the text, where the
  engine generated 7,678 (60 requests × 128 with ``ignore_eos``), and inference-perf's own validation
  warned of the same mismatch. More
  tokens on the client points to *measurement* (chunks or retokenized text counted as tokens);
  fewer points to the *workload* (other traffic on the server during the run, warm-up requests, a
  client file from another run).
* **latency identity**: mean e2e ≈ mean TTFT + per-token time × (mean output tokens − 1), with the
  per-token time the mean TPOT (exact per request) or the mean ITL (exact in total when each chunk
  carries one token); it holds if either does, within ``IDENTITY_TOLERANCE`` when ITL ≈ TPOT (chunks
  of one token), else within ``IDENTITY_TOLERANCE_TPOT`` (TPOT on means is off by its covariance with
  the request's length when lengths vary; a real SGLang client of random lengths is 15 % off). Failure points to
  *measurement*: the client's own latencies do not describe the same requests.
* **physical floor**: the client's time per output token (TPOT, else ITL) cannot be far below the
  engine's ms per token per request at the run's load (its stable decode, else decode under load);
  below half of it points to *measurement*. In a log of several busy stretches the engine's figure
  counts only when its windows lie in the stretch the run was placed in. (The same bound BN01 computed as
  ``tpot_vs_engine_decode``; it is reported here, once.)

A check that lacks a figure is left out with the reason in ``not_applicable``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from logscope.events import BenchResult

ACCOUNTING_TOLERANCE = (
    0.05  # the engine counts agree with real clients within 1.5 % (vLLM windows, SGLang lines)
)
IDENTITY_TOLERANCE = 0.10  # chunks of one token: mean ITL × (mean tokens − 1) is the mean decode time exactly
IDENTITY_TOLERANCE_TPOT = 0.25  # TPOT on means: off by TPOT's covariance with length when lengths vary
FLOOR_FACTOR = 0.5  # the engine's ms/token counts a request being prefilled as running, and windows vary
SPAN_TOLERANCE = 0.25  # a busy stretch matches the client's duration within 25 % + two windows

PointsTo = Literal["measurement", "workload", "real behaviour"]
__all__ = ["EngineSpan", "SelfCheck", "SelfCheckResult", "busy_spans", "self_check"]


class EngineSpan(BaseModel):
    """One busy stretch of the log: the decode windows between two idle periods."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    start_s: float = Field(description="t_s of the stretch's first window's start")
    end_s: float = Field(description="t_s of its last window's end")
    windows: int
    tokens: float = Field(description="tokens the engine generated in the stretch")
    start_wall: datetime | None = Field(
        None, description="wall-clock start as printed (naive), when the log dates it"
    )
    end_wall: datetime | None = None


class SelfCheck(BaseModel):
    """One self-check: the client's figure against the server's (or the identity's) figure."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Literal["token_accounting", "latency_identity", "physical_floor"]
    ok: bool
    points_to: PointsTo | None = Field(
        None, description="when not ok: measurement, workload or real behaviour"
    )
    client: float = Field(description="the client's figure")
    server: float = Field(description="the server's figure (latency identity: the e2e the identity predicts)")
    unit: str
    message: str


class SelfCheckResult(BaseModel):
    """The self-checks of one client result."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    line: int
    method: str
    checks: list[SelfCheck]
    not_applicable: dict[str, str] = Field(
        default_factory=dict, description="check name -> why it was not made"
    )

    @property
    def failed(self) -> list[SelfCheck]:
        return [c for c in self.checks if not c.ok]


def busy_spans(data: Any) -> tuple[list[EngineSpan], str]:
    """The log's busy stretches with the tokens generated in each, and how they were counted."""
    from logscope.analyses.base import is_gap
    from logscope.analyses.series import main_series
    from logscope.timebase import timebase

    s = main_series(data)
    if s is None or len(s.samples) < 2:
        return [], ""
    base = timebase(data.events)
    iv = s.interval or 10.0
    samples = s.samples
    if s.source.startswith("vLLM"):
        how = (
            f"vLLM stats windows: generation throughput × the {iv:g} s logging interval, summed over the "
            "stretch's windows"
        )
        per = [x.gen_tok_s * iv for x in samples]
        busy = [x.gen_tok_s > 0 for x in samples]
    else:
        frame = data.frame("decode_batch")
        spec = "accept_len" in frame.columns and frame["accept_len"].drop_nulls().len() > 0
        pairs = [
            (a, b)
            for a, b in zip(samples, samples[1:], strict=False)
            if not is_gap(b.t_s - a.t_s, iv) and b.running > 0
        ]
        rate_tokens = sum(b.gen_tok_s * (b.t_s - a.t_s) for a, b in pairs)
        running = sum(b.running for _a, b in pairs)
        if spec or running == 0:
            how = "SGLang Decode batch lines: gen throughput × the time since the previous line (speculative decoding)"
            per = [0.0] + [b.gen_tok_s * (b.t_s - a.t_s) for a, b in zip(samples, samples[1:], strict=False)]
        else:
            steps = round(rate_tokens / running)
            if steps < 1:
                return [], ""
            how = (
                f"SGLang Decode batch lines: running requests × {steps} decode steps per line (estimated from "
                "the lines' rates and times), summed"
            )
            per = [x.running * steps for x in samples]
        busy = [x.running > 0 for x in samples]
    spans: list[EngineSpan] = []
    start: int | None = None
    for i, x in enumerate(samples):
        joined = start is not None and busy[i] and not is_gap(x.t_s - samples[i - 1].t_s, iv)
        if start is not None and not joined:
            spans.append(_span(samples, per, start, i - 1, iv))
            start = None
        if busy[i] and start is None:
            start = i
    if start is not None:
        spans.append(_span(samples, per, start, len(samples) - 1, iv))
    return [
        sp.model_copy(update={"start_wall": base.at(sp.start_s), "end_wall": base.at(sp.end_s)})
        for sp in spans
    ], how


def _span(samples: list[Any], per: list[float], a: int, b: int, iv: float) -> EngineSpan:
    return EngineSpan(
        start_s=round(samples[a].t_s - iv, 3),
        end_s=round(samples[b].t_s, 3),
        windows=b - a + 1,
        tokens=round(sum(per[a : b + 1]), 1),
    )


def client_interval(r: BenchResult) -> tuple[datetime, datetime] | None:
    """The client run's wall-clock start and end, when its file gives them (AIPerf's and GuideLLM's
    start/end times, vLLM's ``date`` at the end of the run), as naive local times like the log's."""

    def when(x: Any) -> datetime | None:
        if isinstance(x, int | float) and not isinstance(x, bool) and x > 1e9:
            return datetime.fromtimestamp(x)
        if isinstance(x, str):
            for form in ("%Y%m%d-%H%M%S",):
                try:
                    return datetime.strptime(x, form)
                except ValueError:
                    pass
            try:
                return datetime.fromisoformat(x.replace("Z", "+00:00")).replace(tzinfo=None)
            except ValueError:
                return None
        return None

    start, end = when(r.extra.get("start_time")), when(r.extra.get("end_time"))
    if start is None and end is None and r.duration_s:
        end = when(r.extra.get("date"))
    if end is not None and start is None and r.duration_s:
        start = end - timedelta(seconds=r.duration_s)
    if start is None or end is None or end < start:
        return None
    return start, end


def _place(r: BenchResult, spans: list[EngineSpan] | None) -> tuple[EngineSpan | None, str]:
    """The busy stretch of the log that is this client's run, or None and why not."""
    if not spans:
        return None, "the log holds no decode windows to count the engine's tokens"
    if not r.duration_s:
        return None, "the client file gives no duration to find its run in the log"
    dur = r.duration_s
    iv = max((s.end_s - s.start_s) / s.windows for s in spans)
    match = [s for s in spans if abs((s.end_s - s.start_s) - dur) <= SPAN_TOLERANCE * dur + 2 * iv]
    lengths = ", ".join(f"{s.end_s - s.start_s:.0f} s" for s in spans)
    when = client_interval(r)
    if len(match) > 1 and when is not None:  # several alike: the one the client's own clock falls in
        slack = timedelta(seconds=2 * iv)
        match = [
            s
            for s in match
            if s.start_wall is not None
            and s.end_wall is not None
            and s.start_wall - slack <= when[0]
            and when[1] <= s.end_wall + slack
        ]
    if len(match) != 1:
        return None, (
            f"{'no' if not match else len(match)} busy stretch(es) of the log match the client's "
            f"{dur:.1f} s (stretches: {lengths}): its run cannot be placed"
        )
    return match[0], ""


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}"


def self_check(
    r: BenchResult,
    spans: list[EngineSpan] | None = None,
    how: str = "",
    engine_ms_per_token: float | None = None,
    engine_decode_method: str | None = None,
    engine_window: tuple[float, float] | None = None,
) -> SelfCheckResult:
    """The three self-checks of one client result (see the module's docstring). ``engine_window``: the
    t_s range of the windows behind ``engine_ms_per_token``."""
    checks: list[SelfCheck] = []
    na: dict[str, str] = {}
    n = r.successful_requests
    tokens = float(r.total_output_tokens) if r.total_output_tokens is not None else None

    # -- token accounting ---------------------------------------------------------------------------
    sp, why = _place(r, spans)
    if tokens is None:
        na["token_accounting"] = "the client file gives no total of output tokens"
    elif sp is None:
        na["token_accounting"] = why
    elif sp.windows < 3:
        na["token_accounting"] = f"the run spans {sp.windows} window(s): too few to count tokens"
    else:
        ratio = tokens / sp.tokens if sp.tokens else float("inf")
        ok = abs(ratio - 1) <= ACCOUNTING_TOLERANCE
        where = f"t = {sp.start_s:.0f}–{sp.end_s:.0f} s, {sp.windows} windows"
        msg = (
            f"client output tokens {_fmt(tokens)} vs {_fmt(sp.tokens)} tokens the engine generated over the "
            f"run's span ({where}): ratio {ratio:.2f}"
        )
        points: PointsTo | None = None
        if not ok and ratio > 1:
            points = "measurement"
            msg += (
                ": the client counts more tokens than the engine generated — it counts streamed chunks or "
                "retokenized text as tokens, or reasoning tokens it was not sent; its throughput figures "
                "are inflated by the same factor"
            )
        elif not ok:
            points = "workload"
            msg += (
                ": the engine generated more tokens than this client received — other traffic shared the "
                "server during the run (another client, warm-up requests), or the client file is of "
                "another run"
                + (f"; the client counted {r.failed_requests} failed requests" if r.failed_requests else "")
            )
        checks.append(
            SelfCheck(
                name="token_accounting",
                ok=ok,
                points_to=points,
                client=tokens,
                server=sp.tokens,
                unit="tokens",
                message=msg,
            )
        )

    # -- latency identity ---------------------------------------------------------------------------
    e2e, ttft = r.mean_e2e_ms, r.mean_ttft_ms
    if e2e is None or ttft is None or tokens is None or not n:
        missing = [
            w
            for w, v in (
                ("mean e2e latency", e2e),
                ("mean TTFT", ttft),
                ("total output tokens", tokens),
                ("successful requests", n),
            )
            if not v
        ]
        na["latency_identity"] = f"the client file gives no {' and no '.join(missing)}" + (
            " (vllm bench serve prints e2e only with --percentile-metrics ...,e2el)"
            if e2e is None and r.client == "vllm"
            else ""
        )
    elif r.mean_tpot_ms is None and r.mean_itl_ms is None:
        na["latency_identity"] = "the client file gives neither TPOT nor ITL"
    else:
        per_req = tokens / n
        preds = [
            (name, ttft + v * max(per_req - 1, 0))
            for name, v in (("TPOT", r.mean_tpot_ms), ("ITL", r.mean_itl_ms))
            if v is not None
        ]
        # the ITL form is exact in total when each chunk carries one token (ITL ≈ TPOT); the TPOT form is
        # exact only when every request has the same length (else TPOT's covariance with length enters)
        single = (
            r.mean_itl_ms is not None
            and r.mean_tpot_ms is not None
            and abs(r.mean_itl_ms - r.mean_tpot_ms) <= 0.2 * r.mean_tpot_ms
        )
        tol = IDENTITY_TOLERANCE if single else IDENTITY_TOLERANCE_TPOT
        best = min(preds, key=lambda p: abs(p[1] - e2e))
        ok = abs(best[1] - e2e) <= tol * e2e + 1.0
        per_v = r.mean_tpot_ms if best[0] == "TPOT" else r.mean_itl_ms
        msg = (
            f"mean e2e {e2e:.1f} ms vs mean TTFT {ttft:.1f} ms + mean {best[0]} {per_v:.2f} ms × "
            f"({per_req:.1f} − 1) output tokens = {best[1]:.1f} ms (within {int(tol * 100)} %: "
            + ("chunks of one token" if single else "TPOT on means, lengths may vary")
            + ")"
        )
        if not ok:
            msg += (
                ": the client's latencies do not add up for the same requests — its timing or its token count "
                "is off"
            )
        checks.append(
            SelfCheck(
                name="latency_identity",
                ok=ok,
                points_to=None if ok else "measurement",
                client=e2e,
                server=round(best[1], 3),
                unit="ms",
                message=msg,
            )
        )

    # -- physical floor ---------------------------------------------------------------------------
    per_token = r.mean_tpot_ms if r.mean_tpot_ms is not None else r.mean_itl_ms
    which = "TPOT" if r.mean_tpot_ms is not None else "ITL"
    if per_token is None or not per_token:
        na["physical_floor"] = "the client file gives neither TPOT nor ITL"
    else:
        # the engine's figure (a stable or under-load stretch of windows) must be of this run: in a log of one
        # busy stretch it is; in a log of several, only when its windows lie in the stretch the run was placed in
        inside = (
            sp is not None
            and engine_window is not None
            and sp.start_s - 1 <= engine_window[0]
            and engine_window[1] <= sp.end_s + 1
        )
        if len(spans or []) > 1 and not inside:
            engine_ms_per_token = None
        if not engine_ms_per_token:
            na["physical_floor"] = (
                "the log gives no decode rate per request"
                if len(spans or []) <= 1
                else "the log holds several busy stretches and the engine's decode figure is not "
                "from this run's"
            )
    if "physical_floor" not in na and per_token and engine_ms_per_token:
        ok = per_token >= engine_ms_per_token * (1 - FLOOR_FACTOR) - 0.005
        msg = (
            f"client mean {which} {per_token:.2f} ms per token vs the engine's {engine_ms_per_token:.2f} ms per "
            f"token per request at the run's load ({engine_decode_method or 'its decode rate'})"
        )
        if not ok:
            msg += (
                f": {engine_ms_per_token / per_token:.1f}× faster than the engine decoded, below the physical "
                "floor — the client's timing or token count is wrong"
            )
        checks.append(
            SelfCheck(
                name="physical_floor",
                ok=ok,
                points_to=None if ok else "measurement",
                client=per_token,
                server=engine_ms_per_token,
                unit="ms/token",
                message=msg,
            )
        )
    method = (
        "token accounting over the busy stretch of the log matching the client's duration "
        f"({how or 'no engine windows'}), within {int(ACCOUNTING_TOLERANCE * 100)} %; latency identity "
        f"e2e ≈ TTFT + TPOT (or ITL) × (output tokens − 1) on means, within {int(IDENTITY_TOLERANCE * 100)} % "
        f"(chunks of one token) or {int(IDENTITY_TOLERANCE_TPOT * 100)} %; "
        f"physical floor: the client's time per token ≥ {FLOOR_FACTOR:g} × the engine's ms per token per request"
    )
    return SelfCheckResult(file=r.file, line=r.line, method=method, checks=checks, not_applicable=na)
