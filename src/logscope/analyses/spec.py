"""Speculative decoding: acceptance, drafted vs accepted throughput, waste, and whether it pays off.

- vLLM V1 ``SpecDecoding metrics`` lines count drafts and acceptances per stats window. Totals are
  summed (token-weighted), never averaged line by line: acceptance rate = Σ accepted / Σ drafted;
  mean acceptance length = 1 + Σ accepted / Σ drafts, where a window's drafts = drafted / k when
  that agrees with its printed length, else accepted / (length - 1) (an ngram drafter may propose
  fewer than k tokens); per-position rates are weighted by drafts.
- vLLM V0 ``Speculative metrics`` lines are cumulative since start: consecutive lines are
  differenced (a drop means a restart: the new value is the delta).
- SGLang prints ``accept len`` (and ``accept rate``) on Decode batch lines, each over the same number
  of decode steps: they are weighted by the running requests of the line.

Verdict on the mean acceptance length (tokens per target verification step): at least 2.5 pays off,
1.5 to 2.5 marginal, below 1.5 a net cost (each step still drafts k tokens and verifies k + 1).
"""

from __future__ import annotations

from typing import Any, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.base import NotApplicable, Result, RunData, mean, r
from logscope.analyses.decode import StableDecode

PAYS_OFF = 2.5
MARGINAL = 1.5

Verdict = Literal["pays off", "marginal", "net cost"]


class SpecFigures(BaseModel):
    """Acceptance and throughput over a set of windows."""

    model_config = ConfigDict(extra="forbid")

    windows: int
    mean_acceptance_length: float | None
    acceptance_rate_pct: float | None
    accepted_tok_s: float | None
    drafted_tok_s: float | None
    wasted_draft_pct: float | None
    acceptance_length_range: tuple[float, float] | None = None
    acceptance_rate_range_pct: tuple[float, float] | None = None
    start_line: int | None = None
    end_line: int | None = None


class SpecDecode(Result):
    mean_acceptance_length: float | None
    acceptance_rate_pct: float | None
    accepted_tok_s: float | None
    drafted_tok_s: float | None
    wasted_draft_pct: float | None
    per_position_acceptance: list[float] | None
    verdict: Verdict
    verdict_reason: str
    source: str
    speculative_method: str | None = None
    draft_tokens: int | None = Field(None, description="k, tokens drafted per step")
    accepted_tokens: int | None = None
    drafted_tokens: int | None = None
    run: SpecFigures
    stable_segment: SpecFigures | None = Field(None, description="the windows of the stable decode segment")


def _verdict(mal: float | None, rate: float | None, k: int | None) -> tuple[Verdict, str]:
    if mal is None:
        if rate is None:
            return "net cost", "no acceptance figure"
        mal = 1 + rate / 100 * (k or 1)
    waste = f"; {100 - rate:.1f} % of drafted tokens discarded" if rate is not None else ""
    if mal >= PAYS_OFF:
        return (
            "pays off",
            f"mean acceptance length {mal:.2f} (>= {PAYS_OFF}) tokens per verification step{waste}",
        )
    if mal >= MARGINAL:
        return "marginal", (
            f"mean acceptance length {mal:.2f} ({MARGINAL}-{PAYS_OFF}): the gain may not cover "
            f"drafting and verifying{waste}"
        )
    return "net cost", (
        f"mean acceptance length {mal:.2f} (< {MARGINAL}): almost every step yields one token, as "
        f"without speculation, while paying for the drafts{waste}; spec decode is a net cost here"
    )


def _k(data: RunData, df: pl.DataFrame) -> int | None:
    if "per_position_acceptance" in df.columns:
        lens = [len(x) for x in df["per_position_acceptance"].drop_nulls().to_list() if x is not None]
        if lens:
            return max(lens)
    if "speculative_tokens" in df.columns:
        ks = df["speculative_tokens"].drop_nulls()
        if ks.len():
            return int(ks[-1])
    return data.settings.int("speculative_tokens")


def _vllm_figures(
    rows: list[dict[str, object]], k: int | None
) -> tuple[SpecFigures, list[float] | None, int, int]:
    acc_sum = drafted_sum = 0
    drafts_sum = 0.0
    pp: list[float] | None = None
    pp_w = 0.0
    mals: list[float] = []
    rates: list[float] = []
    acc_rates: list[float] = []
    dr_rates: list[float] = []
    for row in rows:
        acc, dr = row.get("accepted_tokens"), row.get("drafted_tokens")
        mal = row.get("mean_acceptance_length")
        if isinstance(mal, float):
            mals.append(mal)
        if isinstance(row.get("accepted_tok_s"), float):
            acc_rates.append(float(row["accepted_tok_s"]))  # type: ignore[arg-type]
        if isinstance(row.get("drafted_tok_s"), float):
            dr_rates.append(float(row["drafted_tok_s"]))  # type: ignore[arg-type]
        if not isinstance(acc, int) or not isinstance(dr, int):
            rate = row.get("acceptance_rate_pct")
            if isinstance(rate, float):
                rates.append(rate)
            continue
        acc_sum += acc
        drafted_sum += dr
        if dr:
            rates.append(100 * acc / dr)
        # drafts = drafted / k when that agrees with the printed length (exact); an ngram drafter can
        # propose fewer than k tokens, and then accepted / (length - 1) is the estimate
        drafts: float | None = None
        if k and dr and (not isinstance(mal, float) or abs(1 + acc / (dr / k) - mal) < 0.0051):
            drafts = dr / k
        elif isinstance(mal, float) and mal > 1.005 and acc > 0:
            drafts = acc / (mal - 1)
        elif k:
            drafts = dr / k
        if drafts:
            drafts_sum += drafts
            ppa = row.get("per_position_acceptance")
            if isinstance(ppa, list) and ppa:
                if pp is None:
                    pp = [0.0] * len(ppa)
                if len(ppa) == len(pp):
                    pp = [a + float(b) * drafts for a, b in zip(pp, ppa, strict=True)]
                    pp_w += drafts
    mal_all = 1 + acc_sum / drafts_sum if drafts_sum else (mean(mals) if mals else None)
    rate_all = 100 * acc_sum / drafted_sum if drafted_sum else (mean(rates) if rates else None)
    fig = SpecFigures(
        windows=len(rows),
        mean_acceptance_length=r(mal_all, 3),
        acceptance_rate_pct=r(rate_all, 2),
        accepted_tok_s=r(mean(acc_rates), 2) if acc_rates else None,
        drafted_tok_s=r(mean(dr_rates), 2) if dr_rates else None,
        wasted_draft_pct=r(100 - rate_all, 2) if rate_all is not None else None,
        acceptance_length_range=(min(mals), max(mals)) if mals else None,
        acceptance_rate_range_pct=(round(min(rates), 2), round(max(rates), 2)) if rates else None,
        start_line=int(rows[0]["line"]) if rows else None,  # type: ignore[call-overload]
        end_line=int(rows[-1]["line"]) if rows else None,  # type: ignore[call-overload]
    )
    per_pos = [round(x / pp_w, 4) for x in pp] if pp is not None and pp_w else None
    return fig, per_pos, acc_sum, drafted_sum


def _difference(df: pl.DataFrame) -> list[dict[str, object]]:
    """V0 cumulative counters -> per-interval rows (accepted, drafted, emitted, rates per second)."""
    out: list[dict[str, object]] = []
    prev: dict[str, Any] | None = None
    for row in df.sort("seq").iter_rows(named=True):
        d: dict[str, object] = dict(row)
        delta: dict[str, int | None] = {}
        for key in ("accepted_tokens", "drafted_tokens", "emitted_tokens"):
            cur, before = row[key], (prev or {}).get(key)
            delta[key] = cur - before if cur is not None and before is not None and cur >= before else cur
            d[key] = delta[key]
        acc, dr, em = delta["accepted_tokens"], delta["drafted_tokens"], delta["emitted_tokens"]
        dt = (
            row["t_s"] - prev["t_s"]
            if prev is not None and prev["t_s"] is not None and row["t_s"] is not None
            else None
        )
        ok = dt is not None and dt > 0
        d["accepted_tok_s"] = acc / dt if ok and dt and acc is not None else None
        d["drafted_tok_s"] = dr / dt if ok and dt and dr is not None else None
        k = row["speculative_tokens"]
        d["mean_acceptance_length"] = em / (dr / k) if em is not None and dr and k else None
        d["acceptance_rate_pct"] = 100 * acc / dr if acc is not None and dr else None
        out.append(d)
        prev = row
    return out


def _sglang_figures(df: pl.DataFrame, k: int | None) -> SpecFigures:
    rows = df.filter(pl.col("accept_len").is_not_null()).sort("seq")
    w = [max(int(x), 1) for x in rows["running"].to_list()]
    als = [float(x) for x in rows["accept_len"].to_list()]
    rates_raw = rows["accept_rate"].to_list()
    pct = any(x is not None and x > 1 for x in rates_raw)
    rates = [None if x is None else float(x) * (1 if pct else 100) for x in rates_raw]
    if all(x is None for x in rates) and k:
        rates = [100 * (a - 1) / k for a in als]
    wsum = sum(w)
    mal = sum(a * x for a, x in zip(als, w, strict=True)) / wsum if wsum else None
    rr = [(x, ww) for x, ww in zip(rates, w, strict=True) if x is not None]
    rate = sum(x * ww for x, ww in rr) / sum(ww for _x, ww in rr) if rr else None
    gens = rows["gen_tok_s"].to_list()
    acc_tok = [g * (a - 1) / a for g, a in zip(gens, als, strict=True) if a > 0]
    dr_tok = [at / (x / 100) for at, x in zip(acc_tok, rates, strict=False) if x]
    if not dr_tok and k:
        dr_tok = [g / a * k for g, a in zip(gens, als, strict=True) if a > 0]
    rvals = [x for x in rates if x is not None]
    return SpecFigures(
        windows=rows.height,
        mean_acceptance_length=r(mal, 3),
        acceptance_rate_pct=r(rate, 2),
        accepted_tok_s=r(mean(acc_tok), 2) if acc_tok else None,
        drafted_tok_s=r(mean(dr_tok), 2) if dr_tok else None,
        wasted_draft_pct=r(100 - rate, 2) if rate is not None else None,
        acceptance_length_range=(min(als), max(als)) if als else None,
        acceptance_rate_range_pct=(round(min(rvals), 2), round(max(rvals), 2)) if rvals else None,
        start_line=int(rows["line"][0]) if rows.height else None,
        end_line=int(rows["line"][-1]) if rows.height else None,
    )


def _in_segment(df: pl.DataFrame, stable: StableDecode | NotApplicable | None) -> pl.DataFrame | None:
    """The rows printed within the stable segment's windows (vLLM prints them with the stats line)."""
    if not isinstance(stable, StableDecode):
        return None
    sub = df.filter(pl.col("t_s").is_between(stable.start_t_s, stable.end_t_s))
    return sub if sub.height else None


def _absent(data: RunData) -> NotApplicable:
    s = data.settings
    on = s.spec_configured()
    if on:
        method = s.get("speculative_method")
        k = s.get("speculative_tokens")
        what = f"{method}" + (f", {k} tokens" if k else "")
        where = f"speculative decoding is configured ({what}, line {s.lines.get('speculative_method')})"
        if not data.frame("throughput").height and not data.frame("decode_batch").height:
            return NotApplicable(
                reason=f"{where} but the log has no decode activity at all (no stats or decode lines)"
            )
        if data.engine == "vllm":
            return NotApplicable(
                reason=(
                    f"{where} but the log has no acceptance lines: nothing was drafted in any interval (vLLM prints "
                    "`SpecDecoding metrics` only for intervals with drafts; an ngram drafter finds no match on random "
                    "text)"
                )
            )
        return NotApplicable(reason=f"{where} but no decode line carries an acceptance figure (`accept len`)")
    if on is False:
        return NotApplicable(reason="speculative decoding is not configured (speculative config is None)")
    return NotApplicable(
        reason="no speculative-decoding lines and no speculative setting in the configuration"
    )


def spec_decode(
    data: RunData, stable: StableDecode | NotApplicable | None = None
) -> SpecDecode | NotApplicable:
    """Speculative-decoding value of the run (see the module docstring)."""
    sd = data.frame("spec_decode")
    dec = data.frame("decode_batch")
    if stable is None:
        from logscope.analyses.decode import stable_decode

        stable = stable_decode(data)
    method_name = data.settings.get("speculative_method")
    if sd.height:
        k = _k(data, sd)
        cumulative = bool(sd["cumulative"].any())
        rows = _difference(sd) if cumulative else list(sd.sort("seq").iter_rows(named=True))
        fig, per_pos, acc, drafted = _vllm_figures(rows, k)
        seg = None
        sub = _in_segment(sd, stable)
        if sub is not None:
            keep = set(sub["seq"].to_list())
            seg = _vllm_figures([x for x in rows if x["seq"] in keep], k)[0]
        src = (
            "vLLM V0 Speculative metrics lines (cumulative)"
            if cumulative
            else "vLLM SpecDecoding metrics lines"
        )
        method = (
            f"{fig.windows} {src}: acceptance rate = sum of accepted / sum of drafted tokens; mean acceptance "
            f"length = 1 + sum of accepted / sum of drafts (a window's drafts = drafted / k where that matches "
            f"its printed length, else accepted / (length - 1)); per-position rates weighted by drafts; "
            f"accepted and drafted tok/s are the mean of the windows' rates"
        )
        if cumulative:
            method += "; the counters are since start, so consecutive lines were differenced"
    elif dec.height and dec["accept_len"].drop_nulls().len():
        k = data.settings.int("speculative_tokens")
        fig = _sglang_figures(dec, k)
        per_pos, acc, drafted = None, 0, 0
        sub = _in_segment(dec, stable)
        seg = _sglang_figures(sub, k) if sub is not None else None
        src = "SGLang Decode batch lines (accept len / accept rate)"
        method = (
            f"{fig.windows} {src}, weighted by each line's running requests (every line covers the same "
            f"number of decode steps); accepted tok/s = gen throughput x (accept len - 1) / accept len, "
            f"drafted tok/s = accepted / acceptance rate"
        )
    else:
        return _absent(data)
    if seg is not None:
        method += (
            f"; `stable_segment` repeats this over the {seg.windows} windows of the stable decode segment"
        )
    main = seg if seg is not None and seg.mean_acceptance_length is not None else fig
    verdict, why = _verdict(main.mean_acceptance_length, main.acceptance_rate_pct, k)
    method += (
        f". Verdict on the mean acceptance length{' of the stable segment' if main is seg else ''}: "
        f">= {PAYS_OFF} pays off, {MARGINAL}-{PAYS_OFF} marginal, < {MARGINAL} net cost."
    )
    return SpecDecode(
        method=method,
        source=src,
        speculative_method=str(method_name) if method_name is not None else None,
        draft_tokens=k,
        mean_acceptance_length=fig.mean_acceptance_length,
        acceptance_rate_pct=fig.acceptance_rate_pct,
        accepted_tok_s=fig.accepted_tok_s,
        drafted_tok_s=fig.drafted_tok_s,
        wasted_draft_pct=fig.wasted_draft_pct,
        per_position_acceptance=per_pos,
        verdict=verdict,
        verdict_reason=why,
        accepted_tokens=acc or None,
        drafted_tokens=drafted or None,
        run=fig,
        stable_segment=seg,
    )
