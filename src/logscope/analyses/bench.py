"""Sanity checks of a benchmark client's numbers: arithmetic, the client's own consistency, and the
engine's log.

Clients print numbers that people paste into decisions, and they are sometimes wrong: in the
Kimi-K3 case the client printed 1111.61 tok/s output for a run whose 10 requests × 3000 tokens in
295.21 s allow at most 101.6 tok/s. Each check here holds for any correct measurement:

* throughput = tokens / duration: output (total generated tokens when printed, else at most
  successful requests × the requested output length), input, total, and requests / duration. With
  a printed total the figure must match (both clients divide that total by that duration); without
  one it is only bounded;
* latency ≤ duration, and Little's law: the requests' total time in flight (successful × mean
  latency) fits in the run: duration ≥ successful × mean latency / concurrency limit; SGLang's
  printed ``Concurrency`` must equal successful × mean latency / duration;
* the client's own distributions: median ≤ P90 ≤ P95 ≤ P99 ≤ max of each latency, mean ≤ max; the
  mean inter-token latency is a token-weighted mean of the same gaps whose per-request mean is
  TPOT, so it cannot be many times below the mean TPOT (it is above it when chunks carry several
  tokens, as with speculative decoding);
* against the engine log, when the caller has its figures (plain numbers, from the analyses of the
  server log): the client's output throughput × its duration cannot exceed the tokens the engine
  generated (vLLM stats windows: rate × interval, summed); the client's mean TPOT against the engine's ms per token per request (its
  stable decode segment, else its decode under load).

No bound divides by vLLM's ``Avg prompt throughput``: it is a window average of the offered prompt
load, not a prefill speed, and a TTFT bound from it fired on correct clients. A check that cannot be
computed (a number missing) is left out. A failed check names the bound; ``trust`` is set only when
the bound is the same quantity measured right (tokens / duration), never a different figure.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.selfcheck import SelfCheckResult, busy_spans, self_check
from logscope.events import BenchResult

TOLERANCE = 0.02  # printed figures are rounded (2 decimals, durations to 10 ms): relative slack
ENGINE_TOLERANCE = 0.10  # the engine's rates are means over 10 s windows: more slack
TPOT_TOLERANCE = 0.5  # the engine's ms/token counts a request being prefilled as running, and windows vary
SAMPLED_RATE_TOLERANCE = {
    "guidellm": 0.10
}  # a mean of rate samples: a real 0.8 run is 3.3 % off count / duration
ITL_FACTOR = 3.0  # mean ITL below mean TPOT / this: the two cannot describe the same token gaps

Relation = Literal["<=", ">=", "=="]


class BenchCheck(BaseModel):
    """One bound on one client number: ``observed relation bound`` must hold."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    metric: str = Field(description="the client figure checked, as a bench_result field name")
    relation: Relation
    bound: float
    observed: float
    unit: str
    ok: bool
    message: str = Field(description="the check with its numbers, and what to trust when it fails")
    trust: float | None = Field(
        None,
        description="the same quantity, measured right, to use instead of `observed` "
        "when not ok (never a different quantity)",
    )


class BenchSanity(BaseModel):
    """Every check that could be computed for one client result."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    line: int
    checks: list[BenchCheck]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def violations(self) -> list[BenchCheck]:
        return [c for c in self.checks if not c.ok]

    def check(self, name: str) -> BenchCheck | None:
        return next((c for c in self.checks if c.name == name), None)


def _fmt(x: float) -> str:
    """A number as the client prints it: token counts whole, other figures with two decimals."""
    if isinstance(x, int) or (x.is_integer() and abs(x) >= 1000):
        return str(int(x))
    return f"{x:.2f}" if abs(x) >= 0.01 else f"{x:.4g}"


def _upper(observed: float, bound: float, tol: float, digits: int = 2) -> bool:
    """observed ≤ bound, allowing for the printed rounding of ``observed`` and relative slack."""
    return observed <= bound * (1 + tol) + 0.5 * 10.0**-digits


def _lower(observed: float, bound: float, tol: float, digits: int = 2) -> bool:
    return observed >= bound * (1 - tol) - 0.5 * 10.0**-digits


def check_bench(
    result: BenchResult,
    *,
    output_len: int | None = None,
    input_len: int | None = None,
    engine_tokens: float | None = None,
    engine_ms_per_token: float | None = None,
    engine_decode_method: str | None = None,
    tolerance: float = TOLERANCE,
) -> BenchSanity:
    """The sanity checks of one ``bench_result``.

    ``output_len`` / ``input_len``: tokens requested per request (e.g. ``--random-output-len``), used
    when the block printed no totals, and to name the bound (``10 requests × 3000 tokens``).
    ``engine_tokens``: the tokens the engine generated over its stats windows (vLLM: each window's
    rate × the logging interval); ``engine_ms_per_token``: its ms per token per request from
    ``engine_decode_method`` (``"stable decode"`` or ``"decode under load"``).
    """
    r = result
    checks: list[BenchCheck] = []
    n = r.successful_requests
    dur = r.duration_s
    if output_len is None and isinstance(r.extra.get("random_output_len"), int):
        output_len = r.extra["random_output_len"]  # a JSON result's setup: each request's maximum
    if input_len is None and isinstance(r.extra.get("random_input_len"), int):
        input_len = r.extra["random_input_len"]

    # GuideLLM's rates and concurrency are means of its samples over time, not totals / duration
    rate_tol = max(tolerance, SAMPLED_RATE_TOLERANCE.get(r.client or "", 0.0))
    out_tokens, out_how = _tokens(r.total_output_tokens, n, output_len, "generated")
    in_tokens, in_how = _tokens(r.total_input_tokens, n, input_len, "input")

    if dur and dur > 0:
        # -- throughput = tokens / duration ----------------------------------------------------------
        for name, metric, tokens, how, what, printed in (
            (
                "output_throughput",
                "output_tok_s",
                out_tokens,
                out_how,
                "output",
                r.total_output_tokens is not None,
            ),
            ("input_throughput", "input_tok_s", in_tokens, in_how, "input", r.total_input_tokens is not None),
        ):
            obs = getattr(r, metric)
            if obs is None or tokens is None:
                continue
            checks.append(
                _rate_check(
                    name,
                    metric,
                    f"client {what} throughput",
                    obs,
                    tokens,
                    how,
                    dur,
                    "tok/s",
                    printed,
                    rate_tol,
                )
            )
        if r.total_tok_s is not None and in_tokens is not None and out_tokens is not None:
            how = f"({_fmt(in_tokens)} input + {_fmt(out_tokens)} generated tokens)"
            printed = r.total_input_tokens is not None and r.total_output_tokens is not None
            checks.append(
                _rate_check(
                    "total_throughput",
                    "total_tok_s",
                    "client total throughput",
                    r.total_tok_s,
                    in_tokens + out_tokens,
                    how,
                    dur,
                    "tok/s",
                    printed,
                    rate_tol,
                )
            )
        if r.request_throughput is not None and n is not None:
            checks.append(
                _rate_check(
                    "request_throughput",
                    "request_throughput",
                    "client request throughput",
                    r.request_throughput,
                    float(n),
                    f"{n} requests",
                    dur,
                    "req/s",
                    True,
                    rate_tol,
                    nd=3,
                )
            )
        if engine_tokens is not None and r.output_tok_s is not None:
            claimed = r.output_tok_s * dur
            ok = _upper(claimed, engine_tokens, ENGINE_TOLERANCE, digits=0)
            msg = (
                f"client output throughput {_fmt(r.output_tok_s)} tok/s × {_fmt(dur)} s = {claimed:,.0f} tokens "
                f"{'≤' if ok else '>'} the {engine_tokens:,.0f} tokens the engine generated in all its stats "
                f"windows (each window's generation throughput × its length)"
            )
            if not ok:
                msg += ": the client claims more output than the engine produced"
            checks.append(
                BenchCheck(
                    name="output_vs_engine_decode",
                    metric="output_tok_s",
                    relation="<=",
                    bound=round(engine_tokens / dur, 4),
                    observed=r.output_tok_s,
                    unit="tok/s",
                    ok=ok,
                    message=msg,
                )
            )

        # -- latency, duration and Little's law ------------------------------------------------------
        for metric in ("p99_e2e_ms", "max_itl_ms", "p99_ttft_ms", "mean_e2e_ms"):
            obs = getattr(r, metric)
            if obs is None:
                continue
            ok = _lower(dur, obs / 1000, tolerance)
            msg = (
                f"{metric.replace('_ms', '').replace('_', ' ')} {obs / 1000:.2f} s "
                f"{'≤' if ok else '>'} the benchmark duration {_fmt(dur)} s"
            )
            checks.append(
                BenchCheck(
                    name=f"{metric.removesuffix('_ms')}_within_duration",
                    metric=metric,
                    relation="<=",
                    bound=dur * 1000,
                    observed=obs,
                    unit="ms",
                    ok=ok,
                    message=msg,
                )
            )
            break  # the largest latency printed is enough
        lat_ms, lat_how = _mean_latency(r, out_tokens)
        if lat_ms is not None and n:
            limit = r.max_concurrency or n
            why = "concurrency limit" if r.max_concurrency else "requests, no concurrency limit"
            bound = n * lat_ms / 1000 / limit
            ok = _lower(dur, bound, tolerance)
            msg = (
                f"Little's law: {n} requests × {lat_ms / 1000:.2f} s {lat_how} / {limit} ({why}) = "
                f"{bound:.2f} s of run needed {'≤' if ok else '>'} the benchmark duration {_fmt(dur)} s"
            )
            if not ok:
                msg += "; the duration or the latencies are wrong (the requests could not all fit in the run)"
            checks.append(
                BenchCheck(
                    name="duration_vs_latency",
                    metric="duration_s",
                    relation=">=",
                    bound=round(bound, 4),
                    observed=dur,
                    unit="s",
                    ok=ok,
                    message=msg,
                )
            )
            if r.concurrency is not None:
                want = n * lat_ms / 1000 / dur
                ok = abs(r.concurrency - want) <= rate_tol * want + 0.01
                msg = (
                    f"printed concurrency {_fmt(r.concurrency)} {'=' if ok else '≠'} {n} requests × "
                    f"{lat_ms / 1000:.2f} s {lat_how} / {_fmt(dur)} s = {want:.2f}"
                )
                checks.append(
                    BenchCheck(
                        name="concurrency",
                        metric="concurrency",
                        relation="==",
                        bound=round(want, 4),
                        observed=r.concurrency,
                        unit="requests",
                        ok=ok,
                        message=msg,
                        trust=None if ok else round(want, 2),
                    )
                )

    # -- the client's own distributions -------------------------------------------------------------
    checks += _order_checks(r)
    if r.mean_itl_ms is not None and r.mean_tpot_ms:
        bound = r.mean_tpot_ms / ITL_FACTOR
        ok = _lower(r.mean_itl_ms, bound, 0.0)
        msg = (
            f"mean ITL {r.mean_itl_ms:.2f} ms {'≥' if ok else '<'} mean TPOT {r.mean_tpot_ms:.2f} ms / {ITL_FACTOR:g} "
            f"= {bound:.2f} ms (both average the same gaps between tokens, ITL weighted by tokens; ITL is higher "
            f"when chunks carry several tokens)"
        )
        if not ok:
            msg += (
                f": ITL is {r.mean_tpot_ms / r.mean_itl_ms:.1f}× below TPOT, so one of them does not measure "
                "the gaps it names"
            )
        checks.append(
            BenchCheck(
                name="itl_vs_tpot",
                metric="mean_itl_ms",
                relation=">=",
                bound=round(bound, 4),
                observed=r.mean_itl_ms,
                unit="ms",
                ok=ok,
                message=msg,
            )
        )

    # -- against the engine log -------------------------------------------------------------------
    if engine_ms_per_token and r.mean_tpot_ms:
        how = engine_decode_method or "its decode rate"
        ok = _lower(r.mean_tpot_ms, engine_ms_per_token, TPOT_TOLERANCE)
        msg = (
            f"mean TPOT {r.mean_tpot_ms:.2f} ms ({1000 / r.mean_tpot_ms:.1f} tok/s per request) beside the engine's "
            f"{engine_ms_per_token:.2f} ms per token per request ({how})"
        )
        msg += (
            ": consistent"
            if ok
            else (
                f": the client's requests decoded {engine_ms_per_token / r.mean_tpot_ms:.1f}× "
                f"faster than the engine did, beyond the "
                f"{int(TPOT_TOLERANCE * 100)} % the window averages allow; the client's "
                f"timing or its token count is off"
            )
        )
        checks.append(
            BenchCheck(
                name="tpot_vs_engine_decode",
                metric="mean_tpot_ms",
                relation=">=",
                bound=round(engine_ms_per_token * (1 - TPOT_TOLERANCE), 4),
                observed=r.mean_tpot_ms,
                unit="ms",
                ok=ok,
                message=msg,
            )
        )
    return BenchSanity(file=r.file, line=r.line, checks=checks)


def _rate_check(
    name: str,
    metric: str,
    what: str,
    obs: float,
    amount: float,
    how: str,
    dur: float,
    unit: str,
    printed: bool,
    tol: float,
    nd: int = 1,
) -> BenchCheck:
    """``obs`` = ``amount`` / ``dur`` when the amount is a printed total, else ``obs`` ≤ it."""
    bound = amount / dur
    high = not _upper(obs, bound, tol)
    low = printed and not _lower(obs, bound, tol)
    ok = not (high or low)
    sign = ">" if high else "<" if low else ("=" if printed else "≤")
    msg = f"{what} {_fmt(obs)} {unit} {sign} {how} / {_fmt(dur)} s = {bound:.{nd}f} {unit}"
    if high:
        msg += f": the printed figure is {obs / bound:.1f}× what the run could produce; trust {bound:.{nd}f} {unit}"
    elif low:
        msg += (
            f": the printed figure is {obs / bound:.2f}× what its own totals and duration give; trust "
            f"{bound:.{nd}f} {unit}"
        )
    digits = 4 if nd <= 1 else 6
    return BenchCheck(
        name=name,
        metric=metric,
        relation="==" if printed else "<=",
        bound=round(bound, digits),
        observed=obs,
        unit=unit,
        ok=ok,
        message=msg,
        trust=None if ok else round(bound, digits - 2),
    )


_ORDER = ("median", "p90", "p95", "p99", "max")


def _order_checks(r: BenchResult) -> list[BenchCheck]:
    """median ≤ P90 ≤ P95 ≤ P99 ≤ max of each latency the client printed, and mean ≤ max."""
    out: list[BenchCheck] = []
    for what, label in (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2e", "E2E latency")):
        printed = [(q, v) for q in _ORDER if (v := getattr(r, f"{q}_{what}_ms", None)) is not None]
        bad = [(a, b) for a, b in zip(printed, printed[1:], strict=False) if a[1] > b[1] + 0.01]
        mean = getattr(r, f"mean_{what}_ms", None)
        top = getattr(r, f"max_{what}_ms", None)
        if mean is not None and top is not None and mean > top + 0.01:
            bad.append((("mean", mean), ("max", top)))
        if len(printed) < 2 and not bad:
            continue
        ok = not bad
        chain = " ≤ ".join(f"{q.upper() if q.startswith('p') else q} {v:g}" for q, v in printed)
        msg = f"{label} (ms): {chain}" + (
            ""
            if ok
            else ": out of order ("
            + "; ".join(f"{a[0]} {a[1]:g} > {b[0]} {b[1]:g}" for a, b in bad)
            + "), so these are not one distribution's figures"
        )
        lo, hi = bad[0] if bad else (printed[0], printed[-1])
        out.append(
            BenchCheck(
                name=f"{what}_percentile_order",
                metric=f"{lo[0]}_{what}_ms",
                relation="<=",
                bound=hi[1],
                observed=lo[1],
                unit="ms",
                ok=ok,
                message=msg,
            )
        )
    return out


def _tokens(total: int | None, n: int | None, per_request: int | None, what: str) -> tuple[float | None, str]:
    """(tokens, how they were counted) for a throughput bound."""
    if total is not None:
        if n is not None and per_request is not None and total == n * per_request:
            return float(total), f"{n} requests × {per_request} tokens"
        return float(total), f"{total} {what} tokens (printed total)"
    if n is not None and per_request is not None:
        return float(n * per_request), f"{n} requests × {per_request} tokens (at most)"
    return None, ""


def _mean_latency(r: BenchResult, out_tokens: float | None) -> tuple[float | None, str]:
    """Mean end-to-end latency in ms: printed, or TTFT + (tokens per request - 1) × TPOT."""
    if r.mean_e2e_ms is not None:
        return r.mean_e2e_ms, "mean latency"
    n = r.successful_requests
    if r.mean_ttft_ms is not None and r.mean_tpot_ms is not None and out_tokens and n:
        per = out_tokens / n
        return r.mean_ttft_ms + max(per - 1, 0) * r.mean_tpot_ms, "mean latency (TTFT + tokens × TPOT)"
    return None, ""


__all__ = ["BenchCheck", "BenchSanity", "check_bench"]


class BenchEntry(BaseModel):
    """One client result of the run, its main figures and its sanity checks."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    line: int
    client: str | None
    successful_requests: int | None
    duration_s: float | None
    output_tok_s: float | None
    mean_ttft_ms: float | None
    median_ttft_ms: float | None
    p99_ttft_ms: float | None
    mean_tpot_ms: float | None
    median_tpot_ms: float | None
    p99_tpot_ms: float | None
    mean_e2e_ms: float | None
    sanity: BenchSanity
    percentiles_ms: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="every latency percentile the client printed: {ttft|tpot|itl|e2e: "
        "{mean, median, p90, p95, p99, max}}",
    )
    engine_ms_per_token: float | None = Field(
        None, description="the engine's ms per token per request, beside the client's TPOT"
    )
    failed_requests: int | None = None
    request_throughput: float | None = None
    total_input_tokens: int | None = None
    total_output_tokens: int | None = None
    max_concurrency: int | None = None
    self_check: SelfCheckResult | None = Field(
        None,
        description="the client's figures against the engine's log: "
        "token accounting, latency identity, physical floor "
        "(logscope.analyses.selfcheck)",
    )


class BenchSection(BaseModel):
    """The run's client benchmark results, checked against arithmetic and the engine's own rates."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: str
    engine_decode_tok_s: float | None = Field(
        None, description="the engine's decode rate set beside the client's"
    )
    engine_prefill_tok_s: float | None = Field(
        None,
        description="unused since the TTFT bound was dropped (vLLM's "
        "prompt throughput is offered load, not prefill "
        "speed); always null",
    )
    results: list[BenchEntry]
    violations: int
    engine_decode_method: str | None = Field(None, description='"stable decode" or "decode under load"')
    engine_ms_per_token: float | None = Field(
        None, description="the engine's ms per token per request (that method)"
    )
    engine_generated_tokens: float | None = Field(
        None, description="tokens the engine generated over its stats windows (vLLM: rate × interval, summed)"
    )


def engine_figures(data: Any = None, stable: Any = None, under_load: Any = None) -> dict[str, Any]:
    """The engine's own figures for the cross-checks, when known: the tokens it generated (vLLM stats
    windows of ``data``: rate × interval, summed; SGLang's decode lines do not tile the time) and its ms
    per token per request from stable decode, else decode under load."""
    out: dict[str, Any] = {}
    if data is not None:
        from logscope.analyses.series import main_series

        s = main_series(data)
        if s is not None and s.samples and s.source.startswith("vLLM"):
            tokens = sum(x.gen_tok_s for x in s.samples) * (s.interval or 10.0)
            if tokens > 0:
                out["engine_tokens"] = round(tokens, 1)
    for res, how in ((stable, "stable decode"), (under_load, "decode under load")):
        if res is not None and getattr(res, "ms_per_token", None):
            out["engine_ms_per_token"] = float(res.ms_per_token)
            out["engine_decode_method"] = how
            a, b = getattr(res, "start_t_s", None), getattr(res, "end_t_s", None)
            if isinstance(a, int | float) and isinstance(b, int | float):
                out["engine_window"] = (float(a), float(b))
            break
    return out


_PCT = ("mean", "median", "p90", "p95", "p99", "max")


def _percentiles(r: BenchResult) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for what in ("ttft", "tpot", "itl", "e2e"):
        got = {q: float(v) for q in _PCT if (v := getattr(r, f"{q}_{what}_ms", None)) is not None}
        if got:
            out[what] = got
    return out


def decode_figure(stable: Any, under_load: Any) -> tuple[Any, str] | None:
    """The best decode result a run has, and its name: stable decode, else decode under load."""
    if stable is not None:
        return stable, "stable decode"
    if under_load is not None:
        return under_load, "decode under load"
    return None


def bench_section(
    results: list[BenchResult],
    stable: Any = None,
    prefill: Any = None,
    under_load: Any = None,
    data: Any = None,
) -> BenchSection | None:
    """Every ``bench_result`` of the run with its checks; None when the run holds none. (``prefill`` is
    accepted and unused: no check divides by vLLM's offered prompt load any more.)"""
    if not results:
        return None
    eng = engine_figures(data, stable, under_load)
    best = decode_figure(stable, under_load)
    spans, how = busy_spans(data) if data is not None else ([], "")
    entries = []
    for r in results:
        sanity = check_bench(r, **{k: v for k, v in eng.items() if k != "engine_window"})
        checked = self_check(
            r,
            spans,
            how,
            eng.get("engine_ms_per_token"),
            eng.get("engine_decode_method"),
            eng.get("engine_window"),
        )
        entries.append(
            BenchEntry(
                file=r.file,
                line=r.line,
                client=r.client,
                successful_requests=r.successful_requests,
                duration_s=r.duration_s,
                output_tok_s=r.output_tok_s,
                mean_ttft_ms=r.mean_ttft_ms,
                median_ttft_ms=r.median_ttft_ms,
                p99_ttft_ms=r.p99_ttft_ms,
                mean_tpot_ms=r.mean_tpot_ms,
                median_tpot_ms=r.median_tpot_ms,
                p99_tpot_ms=r.p99_tpot_ms,
                mean_e2e_ms=r.mean_e2e_ms,
                sanity=sanity,
                percentiles_ms=_percentiles(r),
                engine_ms_per_token=eng.get("engine_ms_per_token"),
                self_check=checked,
                failed_requests=r.failed_requests,
                request_throughput=r.request_throughput,
                total_input_tokens=r.total_input_tokens,
                total_output_tokens=r.total_output_tokens,
                max_concurrency=r.max_concurrency,
            )
        )
    method = (
        "each client result block checked against tokens / duration, Little's law, latency vs duration and its "
        "own distributions (percentile order, ITL vs TPOT)"
    )
    if eng:
        method += (
            "; against the engine's log: output throughput × duration vs the tokens the engine generated, mean TPOT "
            f"beside the engine's ms per token per request ({eng.get('engine_decode_method', 'none')})"
        )
    return BenchSection(
        method=method,
        engine_decode_tok_s=None if best is None else float(best[0].mean_tok_s),
        engine_prefill_tok_s=None,
        results=entries,
        violations=sum(len(e.sanity.violations) for e in entries),
        engine_decode_method=eng.get("engine_decode_method"),
        engine_ms_per_token=eng.get("engine_ms_per_token"),
        engine_generated_tokens=eng.get("engine_tokens"),
    )
