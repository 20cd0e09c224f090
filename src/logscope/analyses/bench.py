"""Sanity checks of a benchmark client's numbers against arithmetic and physics.

Clients print numbers that people paste into decisions, and they are sometimes wrong: in the
Kimi-K3 case the client printed 1111.61 tok/s output for a run whose 10 requests × 3000 tokens in
295.21 s allow at most 101.6 tok/s. Each check here is a bound that holds for any correct
measurement:

* throughput ≤ tokens / duration: output (total generated tokens when printed, else successful
  requests × the requested output length), input, total, and requests / duration;
* latency ≤ duration, and Little's law: the requests' total time in flight (successful × mean
  latency) fits in the run: duration ≥ successful × mean latency / concurrency limit; SGLang's
  printed ``Concurrency`` must equal successful × mean latency / duration;
* against the engine log, when the caller has its figures (plain numbers, from the analyses of the
  server log): mean TTFT ≥ one request's input / the engine's prefill rate; output throughput ≤ the
  engine's stable decode rate; the client's per-request decode rate (1000 / TPOT) against the
  engine's per request in its stable segment (stable rate / running requests).

A check that cannot be computed (a number missing) is left out. Each check says which number to
trust instead when it fails.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from logscope.events import BenchResult

TOLERANCE = 0.02  # printed figures are rounded (2 decimals, durations to 10 ms): relative slack
ENGINE_TOLERANCE = 0.10  # the engine's rates are means over 10 s windows: more slack
TPOT_TOLERANCE = 0.5  # requests also decode beside fewer neighbours than in the stable segment

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
    trust: float | None = Field(None, description="the value to use instead of `observed` when not ok")


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
    engine_prefill_tok_s: float | None = None,
    engine_decode_tok_s: float | None = None,
    engine_decode_running: float | None = None,
    tolerance: float = TOLERANCE,
) -> BenchSanity:
    """The sanity checks of one ``bench_result``.

    ``output_len`` / ``input_len``: tokens requested per request (e.g. ``--random-output-len``), used
    when the block printed no totals, and to name the bound (``10 requests × 3000 tokens``).
    ``engine_prefill_tok_s``: the engine's aggregate prefill rate; ``engine_decode_tok_s``: its stable
    aggregate decode rate, with ``engine_decode_running`` requests running in that segment.
    """
    r = result
    checks: list[BenchCheck] = []
    n = r.successful_requests
    dur = r.duration_s
    if output_len is None and isinstance(r.extra.get("random_output_len"), int):
        output_len = r.extra["random_output_len"]  # a JSON result's setup: each request's maximum
    if input_len is None and isinstance(r.extra.get("random_input_len"), int):
        input_len = r.extra["random_input_len"]

    out_tokens, out_how = _tokens(r.total_output_tokens, n, output_len, "generated")
    in_tokens, in_how = _tokens(r.total_input_tokens, n, input_len, "input")

    if dur and dur > 0:
        # -- throughput ≤ tokens / duration --------------------------------------------------------
        for name, metric, tokens, how, what in (
            ("output_throughput", "output_tok_s", out_tokens, out_how, "output"),
            ("input_throughput", "input_tok_s", in_tokens, in_how, "input"),
        ):
            obs = getattr(r, metric)
            if obs is None or tokens is None:
                continue
            bound = tokens / dur
            ok = _upper(obs, bound, tolerance)
            msg = (f"client {what} throughput {_fmt(obs)} tok/s {'≤' if ok else '>'} {how} / {_fmt(dur)} s = "
                   f"{bound:.1f} tok/s")
            if not ok:
                msg += (f": the printed figure is {obs / bound:.1f}× what the run could produce; "
                        f"trust {bound:.1f} tok/s")
                if what == "output" and engine_decode_tok_s is not None:
                    msg += f" or the engine's stable decode rate ({engine_decode_tok_s:.1f} tok/s)"
            checks.append(BenchCheck(name=name, metric=metric, relation="<=", bound=round(bound, 4), observed=obs,
                                     unit="tok/s", ok=ok, message=msg, trust=None if ok else round(bound, 2)))
        if r.total_tok_s is not None and in_tokens is not None and out_tokens is not None:
            bound = (in_tokens + out_tokens) / dur
            ok = _upper(r.total_tok_s, bound, tolerance)
            msg = (f"client total throughput {_fmt(r.total_tok_s)} tok/s {'≤' if ok else '>'} ({_fmt(in_tokens)} input "
                   f"+ {_fmt(out_tokens)} generated tokens) / {_fmt(dur)} s = {bound:.1f} tok/s")
            if not ok:
                msg += f"; trust {bound:.1f} tok/s"
            checks.append(BenchCheck(name="total_throughput", metric="total_tok_s", relation="<=",
                                     bound=round(bound, 4), observed=r.total_tok_s, unit="tok/s", ok=ok,
                                     message=msg, trust=None if ok else round(bound, 2)))
        if r.request_throughput is not None and n is not None:
            bound = n / dur
            ok = _upper(r.request_throughput, bound, tolerance)
            msg = (f"client request throughput {_fmt(r.request_throughput)} req/s {'≤' if ok else '>'} {n} "
                   f"requests / {_fmt(dur)} s = {bound:.3f} req/s")
            checks.append(BenchCheck(name="request_throughput", metric="request_throughput", relation="<=",
                                     bound=round(bound, 6), observed=r.request_throughput, unit="req/s", ok=ok,
                                     message=msg, trust=None if ok else round(bound, 4)))
        if engine_decode_tok_s is not None and r.output_tok_s is not None:
            ok = _upper(r.output_tok_s, engine_decode_tok_s, ENGINE_TOLERANCE)
            msg = (f"client output throughput {_fmt(r.output_tok_s)} tok/s {'≤' if ok else '>'} the engine's "
                   f"stable decode rate {engine_decode_tok_s:.1f} tok/s (the engine cannot emit tokens faster than "
                   f"it decodes them)")
            if not ok:
                msg += f"; trust the engine's {engine_decode_tok_s:.1f} tok/s"
            checks.append(BenchCheck(name="output_vs_engine_decode", metric="output_tok_s", relation="<=",
                                     bound=engine_decode_tok_s, observed=r.output_tok_s, unit="tok/s", ok=ok,
                                     message=msg, trust=None if ok else engine_decode_tok_s))

        # -- latency, duration and Little's law ------------------------------------------------------
        for metric in ("p99_e2e_ms", "max_itl_ms", "p99_ttft_ms", "mean_e2e_ms"):
            obs = getattr(r, metric)
            if obs is None:
                continue
            ok = _lower(dur, obs / 1000, tolerance)
            msg = (f"{metric.replace('_ms', '').replace('_', ' ')} {obs / 1000:.2f} s "
                   f"{'≤' if ok else '>'} the benchmark duration {_fmt(dur)} s")
            checks.append(BenchCheck(name=f"{metric.removesuffix('_ms')}_within_duration", metric=metric,
                                     relation="<=", bound=dur * 1000, observed=obs, unit="ms", ok=ok, message=msg))
            break  # the largest latency printed is enough
        lat_ms, lat_how = _mean_latency(r, out_tokens)
        if lat_ms is not None and n:
            limit = r.max_concurrency or n
            why = "concurrency limit" if r.max_concurrency else "requests, no concurrency limit"
            bound = n * lat_ms / 1000 / limit
            ok = _lower(dur, bound, tolerance)
            msg = (f"Little's law: {n} requests × {lat_ms / 1000:.2f} s {lat_how} / {limit} ({why}) = "
                   f"{bound:.2f} s of run needed {'≤' if ok else '>'} the benchmark duration {_fmt(dur)} s")
            if not ok:
                msg += "; the duration or the latencies are wrong (the requests could not all fit in the run)"
            checks.append(BenchCheck(name="duration_vs_latency", metric="duration_s", relation=">=",
                                     bound=round(bound, 4), observed=dur, unit="s", ok=ok, message=msg))
            if r.concurrency is not None:
                want = n * lat_ms / 1000 / dur
                ok = abs(r.concurrency - want) <= tolerance * want + 0.01
                msg = (f"printed concurrency {_fmt(r.concurrency)} {'=' if ok else '≠'} {n} requests × "
                       f"{lat_ms / 1000:.2f} s {lat_how} / {_fmt(dur)} s = {want:.2f}")
                checks.append(BenchCheck(name="concurrency", metric="concurrency", relation="==", bound=round(want, 4),
                                         observed=r.concurrency, unit="requests", ok=ok, message=msg,
                                         trust=None if ok else round(want, 2)))

    # -- against the engine log -------------------------------------------------------------------
    per_req_in = input_len if input_len is not None else (in_tokens / n if in_tokens is not None and n else None)
    if engine_prefill_tok_s and per_req_in is not None and r.mean_ttft_ms is not None:
        bound = per_req_in / engine_prefill_tok_s * 1000
        ok = _lower(r.mean_ttft_ms, bound, ENGINE_TOLERANCE)
        msg = (f"mean TTFT {r.mean_ttft_ms:.2f} ms {'≥' if ok else '<'} {_fmt(per_req_in)} input tokens per request / "
               f"the engine's prefill rate {engine_prefill_tok_s:.1f} tok/s = {bound:.1f} ms")
        if not ok:
            msg += ("; the client's first token came before the engine could have prefilled the prompt "
                    "(prefix-cache hits, or the client times something else)")
        checks.append(BenchCheck(name="ttft_vs_engine_prefill", metric="mean_ttft_ms", relation=">=",
                                 bound=round(bound, 4), observed=r.mean_ttft_ms, unit="ms", ok=ok, message=msg))
    if engine_decode_tok_s and engine_decode_running and r.mean_tpot_ms:
        engine_ms = 1000 * engine_decode_running / engine_decode_tok_s
        ok = _lower(r.mean_tpot_ms, engine_ms, TPOT_TOLERANCE)
        msg = (f"mean TPOT {r.mean_tpot_ms:.2f} ms ({1000 / r.mean_tpot_ms:.1f} tok/s per request) against the engine's "
               f"{engine_ms:.2f} ms per token per request in its stable segment ({engine_decode_tok_s:.1f} tok/s / "
               f"{_fmt(engine_decode_running)} running)")
        msg += ": consistent" if ok else (f": the client's requests decoded {engine_ms / r.mean_tpot_ms:.1f}× faster "
                                          f"than the engine did; trust the engine's {engine_ms:.2f} ms")
        checks.append(BenchCheck(name="tpot_vs_engine_decode", metric="mean_tpot_ms", relation=">=",
                                 bound=round(engine_ms * (1 - TPOT_TOLERANCE), 4), observed=r.mean_tpot_ms, unit="ms",
                                 ok=ok, message=msg, trust=None if ok else round(engine_ms, 2)))
    return BenchSanity(file=r.file, line=r.line, checks=checks)


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


class BenchSection(BaseModel):
    """The run's client benchmark results, checked against arithmetic and the engine's own rates."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: str
    engine_decode_tok_s: float | None = Field(None, description="the engine's stable decode rate used by the checks")
    engine_prefill_tok_s: float | None = Field(None, description="the engine's prefill rate used by the checks")
    results: list[BenchEntry]
    violations: int


def engine_figures(stable: Any, prefill: Any) -> dict[str, float]:
    """The engine's own rates for the cross-checks (stable decode, sustained prefill), when known."""
    out: dict[str, float] = {}
    if stable is not None and getattr(stable, "mean_tok_s", None) is not None:
        out["engine_decode_tok_s"] = float(stable.mean_tok_s)
        out["engine_decode_running"] = float(stable.concurrency)
    if prefill is not None and getattr(prefill, "mean_tok_s", None) is not None:
        sustained = getattr(prefill, "sustained", None)
        out["engine_prefill_tok_s"] = float(sustained.mean_tok_s if sustained is not None else prefill.mean_tok_s)
    return out


def bench_section(results: list[BenchResult], stable: Any = None, prefill: Any = None) -> BenchSection | None:
    """Every ``bench_result`` of the run with its checks; None when the run holds none."""
    if not results:
        return None
    eng = engine_figures(stable, prefill)
    entries = []
    for r in results:
        sanity = check_bench(r, engine_decode_tok_s=eng.get("engine_decode_tok_s"),
                             engine_decode_running=eng.get("engine_decode_running"),
                             engine_prefill_tok_s=eng.get("engine_prefill_tok_s"))
        entries.append(BenchEntry(
            file=r.file, line=r.line, client=r.client, successful_requests=r.successful_requests,
            duration_s=r.duration_s, output_tok_s=r.output_tok_s, mean_ttft_ms=r.mean_ttft_ms,
            median_ttft_ms=r.median_ttft_ms, p99_ttft_ms=r.p99_ttft_ms, mean_tpot_ms=r.mean_tpot_ms,
            median_tpot_ms=r.median_tpot_ms, p99_tpot_ms=r.p99_tpot_ms, mean_e2e_ms=r.mean_e2e_ms, sanity=sanity,
        ))
    method = ("each client result block checked against tokens / duration bounds, Little's law and latency vs "
              "duration" + ("; and against the engine's stable decode / prefill rates from this run's log"
                            if eng else ""))
    return BenchSection(
        method=method, engine_decode_tok_s=eng.get("engine_decode_tok_s"),
        engine_prefill_tok_s=eng.get("engine_prefill_tok_s"), results=entries,
        violations=sum(len(e.sanity.violations) for e in entries),
    )
