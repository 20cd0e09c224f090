"""Two runs side by side: every section, the decode degradation ratio, and the configuration
differences that make the comparison something other than an A/B test.

Degradation ratios are BASE / OTHER of the decode aggregate rate (how many times slower OTHER
decodes), by mean, by median and by peak, each labelled with its numbers. The rate is of the best
method both runs share: stable decode (pure-decode windows) when both have it, else decode under
load (prefills in the windows) when both have that; ``method`` says which. Never one of each. The mixed ratio BASE peak /
OTHER mean is shown beside them, labelled, because that is how such figures often get quoted (a 64K
peak over a 200K mean reads 3.29x where mean over mean is 3.07x).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from logscope.analyses.abguard import SPEC, NotAb, not_ab
from logscope.analyses.base import NotApplicable, RunData, RunLike, median
from logscope.analyses.compare_verdicts import Side, Verdicts, verdicts
from logscope.analyses.prefill import chunk_series
from logscope.analyses.report import SECTIONS, Report, build_report
from logscope.analyses.settings import COMPARED, label
from logscope.analyses.verdict import DEFAULT_THRESHOLD_PCT


class RunInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str
    engine: str | None
    engine_version: str | None
    files: list[str]


class Ratio(BaseModel):
    model_config = ConfigDict(extra="forbid")

    value: float
    label: str


class Context(BaseModel):
    """The context length a run served, and where that figure comes from."""

    model_config = ConfigDict(extra="forbid")

    tokens: float
    source: str


class Degradation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metric: str = "stable decode aggregate tok/s, BASE / OTHER"
    method: str | None = Field(
        None,
        description="the decode result both runs share and the ratios use: "
        '"stable_decode" or "decode_under_load"',
    )
    ratio_mean: float | None = None
    ratio_median: float | None = None
    ratio_peak: float | None = None
    ratio_base_peak_over_other_mean: float | None = Field(
        None,
        description="mixed-method ratio (BASE peak / OTHER mean), shown so that such quotes can be checked",
    )
    labels: dict[str, str] = Field(default_factory=dict)
    context_ratio: float | None = Field(None, description="OTHER / BASE context length, when the logs say it")
    context_base: Context | None = None
    context_other: Context | None = None
    per_request: dict[str, dict[str, float]] = Field(default_factory=dict)
    not_applicable: str | None = None


class ConfigDifference(BaseModel):
    model_config = ConfigDict(extra="forbid")

    setting: str
    label: str
    base: Any
    other: Any
    both_printed: bool = Field(
        True, description="false when only one log prints the setting (the other may run the default)"
    )


class Row(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metric: str
    base: Any
    other: Any


class Comparison(BaseModel):
    model_config = ConfigDict(extra="forbid")

    base: RunInfo
    other: RunInfo
    labels: list[str]
    degradation: Degradation
    sections: dict[str, dict[str, Any]]
    not_applicable: dict[str, dict[str, str]] = Field(default_factory=dict)
    summary: list[Row] = Field(default_factory=list)
    config_differences: list[ConfigDifference] = Field(default_factory=list)
    warning: str | None = None
    not_ab: list[NotAb] = Field(
        default_factory=list,
        description=(
            "why BASE and OTHER are not an A/B test of one change (empty: no reason found); the context length is "
            "the variable under test and is never a reason (degradation.context_ratio)"
        ),
    )
    verdicts: Verdicts | None = Field(
        None,
        description=(
            "each headline metric's change OTHER vs BASE with its confidence interval and PASS / FAIL / INCONCLUSIVE "
            "against the threshold (analyses/verdict.py), over the runs of each side"
        ),
    )
    runs: dict[str, list[list[str]]] = Field(
        default_factory=dict,
        description=(
            "with several runs per side: each run's files, by side (base, other); the sections show the first run"
        ),
    )
    # each run's report, by side ("base", "other"), in the order of the runs: what the renderers draw and
    # write from (figures, --format br) without analysing the runs again; not part of the JSON
    _reports: dict[str, list[Report]] = PrivateAttr(default_factory=dict)

    def reports(self, role: str) -> list[Report]:
        """The reports of one side's runs (``"base"`` or ``"other"``), as the comparison made them."""
        return self._reports.get(role, [])

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def __repr__(
        self,
    ) -> str:  # short, for notebooks and terminals (logscope.render.notebook; imported on call)
        from logscope.render.notebook import comparison_repr

        return comparison_repr(self)

    def _repr_html_(self) -> str:
        from logscope.render.notebook import comparison_html

        return comparison_html(self)


def _ratio(a: float | None, b: float | None, how: str) -> Ratio | None:
    if a is None or b is None or b == 0:
        return None
    v = round(a / b, 2)
    return Ratio(value=v, label=f"{a:g} / {b:g} = {v:.2f}x {how}")


def _kv_context(data: RunData, sd: Any, kv_tokens: int | None) -> float | None:
    """KV tokens in use per running request in the decode segment's first window (times the DCP size
    for SGLang, whose usage is per rank and each rank holds 1/DCP of every sequence)."""
    if not kv_tokens:
        return None
    df = data.frame("throughput")
    if df.height:
        row = df.filter((pl.col("line") == sd.start_line) & (pl.col("file") == sd.file))
        pct = row["gpu_kv_cache_pct"].drop_nulls()
        shards = 1
    else:
        row = data.frame("decode_batch").filter(
            (pl.col("line") == sd.start_line) & (pl.col("file") == sd.file)
        )
        pct = row["token_usage"].drop_nulls() * 100
        shards = data.settings.int("decode_context_parallel") or 1
    if not pct.len():
        return None
    return float(pct[0]) / 100 * kv_tokens * shards / float(sd.concurrency)


_BENCH = "mean input tokens per request (benchmark client block)"
_CHUNKS = "median prefill tokens of a chunked request (SGLang prefill lines)"
_KV = "KV tokens in use per running request at the start of the stable segment"
_KV_LOAD = "KV tokens in use per running request at the start of the decode-under-load windows"
_CONFIG = "max model len (configuration)"


def _contexts(data: RunData, rep: Report, method: str = "stable_decode") -> dict[str, float]:
    """Context-length estimates by source, most direct first."""
    out: dict[str, float] = {}
    bench = data.frame("bench_result").drop_nulls(["total_input_tokens", "successful_requests"])
    if bench.height:
        row = bench.row(bench.height - 1, named=True)
        if row["successful_requests"]:
            out[_BENCH] = row["total_input_tokens"] / row["successful_requests"]
    series, _chunk, _note = chunk_series(data)
    if series:
        out[_CHUNKS] = median([float(c.new_tokens) for c in series])
    seg = getattr(rep, method)  # the segment of the method both runs share
    if seg is not None and rep.kv_pool is not None:
        v = _kv_context(data, seg, rep.kv_pool.tokens)
        if v:
            out[_KV if method == "stable_decode" else _KV_LOAD] = v
    return out


def _shared(a: Report, b: Report) -> tuple[str, Any, Any] | None:
    """The best decode result both runs have: stable decode, else decode under load."""
    for name in ("stable_decode", "decode_under_load"):
        sa, sb = getattr(a, name), getattr(b, name)
        if sa is not None and sb is not None:
            return name, sa, sb
    return None


def _degradation(a: Report, b: Report, da: RunData, db: RunData) -> Degradation:
    shared = _shared(a, b)
    if shared is None:
        miss = [
            f"{n}: stable decode: {r.not_applicable.get('stable_decode')}; decode under load: "
            f"{r.not_applicable.get('decode_under_load', 'present')}"
            for n, r in (("base", a), ("other", b))
            if r.stable_decode is None
        ]
        return Degradation(
            not_applicable="no decode method both runs share (stable decode in both, or decode under "
            "load in both) - " + "; ".join(miss)
        )
    method, sa, sb = shared
    if method == "stable_decode":
        return _rates(a, b, da, db, sa, sb, method, "stable decode aggregate tok/s, BASE / OTHER")
    return _rates(
        a,
        b,
        da,
        db,
        sa,
        sb,
        method,
        "decode under load aggregate tok/s (prefills in the windows), BASE / OTHER",
    )


def _rates(
    a: Report, b: Report, da: RunData, db: RunData, sa: Any, sb: Any, method: str, metric: str
) -> Degradation:
    rm = _ratio(sa.mean_tok_s, sb.mean_tok_s, "by mean")
    rmed = _ratio(sa.median_tok_s, sb.median_tok_s, "by median")
    rp = _ratio(sa.max_tok_s, sb.max_tok_s, "by peak")
    rmix = _ratio(sa.max_tok_s, sb.mean_tok_s, "BASE peak / OTHER mean (mixed methods)")
    labels = {
        k: x.label
        for k, x in (
            ("ratio_mean", rm),
            ("ratio_median", rmed),
            ("ratio_peak", rp),
            ("ratio_base_peak_over_other_mean", rmix),
        )
        if x is not None
    }

    def per(x: Any) -> dict[str, float]:
        keys = (
            ("tok_s", "per_request_tok_s"),
            ("ms_per_token", "ms_per_token"),
            ("peak_tok_s", "per_request_peak_tok_s"),
            ("ms_per_token_at_peak", "ms_per_token_at_peak"),
        )
        return {k: float(v) for k, attr in keys if (v := getattr(x, attr, None)) is not None}

    deg = Degradation(
        metric=metric,
        method=method,
        ratio_mean=rm.value if rm else None,
        ratio_median=rmed.value if rmed else None,
        ratio_peak=rp.value if rp else None,
        ratio_base_peak_over_other_mean=rmix.value if rmix else None,
        labels=labels,
        per_request={"base": per(sa), "other": per(sb)},
    )
    ca, cb = _contexts(da, a, method), _contexts(db, b, method)
    mla, mlb = da.settings.int("max_model_len"), db.settings.int("max_model_len")
    if mla and mlb and mla != mlb:
        ca[_CONFIG], cb[_CONFIG] = float(mla), float(mlb)
    common = [k for k in ca if k in cb]
    if common:
        sa_, sb_ = common[0], common[0]
    elif ca and cb:  # each run's most direct figure, sources named
        sa_, sb_ = next(iter(ca)), next(iter(cb))
    else:
        return deg
    ratio = round(cb[sb_] / ca[sa_], 2)
    deg = deg.model_copy(
        update={
            "context_ratio": ratio,
            "context_base": Context(tokens=round(ca[sa_], 1), source=sa_),
            "context_other": Context(tokens=round(cb[sb_], 1), source=sb_),
        }
    )
    src = sa_ if sa_ == sb_ else f"BASE: {sa_}; OTHER: {sb_}"
    deg.labels["context_ratio"] = f"{cb[sb_]:,.0f} / {ca[sa_]:,.0f} = {ratio:.2f}x, OTHER / BASE ({src})"
    return deg


def _context_ratio(a: Report, b: Report, da: RunData, db: RunData) -> float | None:
    """OTHER / BASE context length from a source both runs share, when the degradation could not give it
    (a run without a stable decode segment): what ``not_ab`` needs to tell the experiment apart."""
    ca, cb = _contexts(da, a), _contexts(db, b)
    common = [k for k in ca if k in cb and ca[k]]
    return round(cb[common[0]] / ca[common[0]], 2) if common else None


_SAME = {"fp8": "fp8_e4m3", "torch.float8_e4m3fn": "fp8_e4m3", "fp8_e4m3fn": "fp8_e4m3"}


def _norm(v: Any) -> Any:
    if isinstance(v, str):
        t = v.strip().strip("'\"")
        t = _SAME.get(t.lower(), t)
        try:
            f = float(t)
        except ValueError:
            return t.lower()
        return int(f) if f.is_integer() else f
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _differences(da: RunData, db: RunData) -> list[ConfigDifference]:
    out: list[ConfigDifference] = []
    if da.engine != db.engine:
        out.append(ConfigDifference(setting="engine", label="engine", base=da.engine, other=db.engine))
    elif da.engine_version != db.engine_version:
        out.append(
            ConfigDifference(
                setting="engine_version",
                label="engine version",
                base=da.engine_version,
                other=db.engine_version,
            )
        )
    for name in COMPARED:
        va, vb = da.settings.get(name), db.settings.get(name)
        if va is None and vb is None:
            continue
        if _norm(va) != _norm(vb):
            out.append(
                ConfigDifference(
                    setting=name,
                    label=label(name),
                    base=va,
                    other=vb,
                    both_printed=va is not None and vb is not None,
                )
            )
    return out


def _summary(a: Report, b: Report) -> list[Row]:
    rows: list[Row] = []

    def add(metric: str, section: str, attr: str) -> None:
        sa, sb = a.section(section), b.section(section)
        va = getattr(sa, attr, None) if sa is not None else None
        vb = getattr(sb, attr, None) if sb is not None else None
        if va is not None or vb is not None:
            rows.append(Row(metric=metric, base=va, other=vb))

    load = a.stable_decode is None or b.stable_decode is None  # decode under load rows only where it is used
    for metric, section, attr in (
        ("stable decode mean tok/s", "stable_decode", "mean_tok_s"),
        ("stable decode median tok/s", "stable_decode", "median_tok_s"),
        ("stable decode min tok/s", "stable_decode", "min_tok_s"),
        ("stable decode max tok/s", "stable_decode", "max_tok_s"),
        ("concurrency", "stable_decode", "concurrency"),
        ("per-request tok/s", "stable_decode", "per_request_tok_s"),
        ("ms/token", "stable_decode", "ms_per_token"),
        ("decode under load mean tok/s", "decode_under_load", "mean_tok_s"),
        ("decode under load median tok/s", "decode_under_load", "median_tok_s"),
        ("decode under load running", "decode_under_load", "concurrency"),
        ("decode under load ms/token", "decode_under_load", "ms_per_token"),
        ("decode under load prompt share %", "decode_under_load", "prompt_share_pct"),
        ("prefill mean tok/s", "prefill", "mean_tok_s"),
        ("prefill chunk decay (median %)", "prefill", "chunk_decay_median_pct"),
        ("spec mean acceptance length", "spec_decode", "mean_acceptance_length"),
        ("spec acceptance rate %", "spec_decode", "acceptance_rate_pct"),
        ("spec wasted draft %", "spec_decode", "wasted_draft_pct"),
        ("spec verdict", "spec_decode", "verdict"),
        ("KV pool tokens", "kv_pool", "tokens"),
        ("KV pool GiB", "kv_pool", "memory_gib"),
        ("max model len", "kv_pool", "max_model_len"),
        ("max concurrency", "kv_pool", "max_concurrency"),
        ("KV shortfall %", "kv_pool", "shortfall_pct"),
        ("KV over-commit GiB", "kv_pool", "overcommit_gib"),
        ("max running requests", "kv_pool", "max_running_requests"),
        ("cold start s", "cold_start", "total_s"),
        ("OOMs", "disturbances", "oom"),
        ("runtime compiles", "disturbances", "runtime_compiles"),
        ("errors", "disturbances", "errors"),
    ):
        if section != "decode_under_load" or load:
            add(metric, section, attr)
    # client benchmark results, first result of each run (P50 is the median the clients print)
    ra = a.bench.results[0] if a.bench is not None and a.bench.results else None
    rb = b.bench.results[0] if b.bench is not None and b.bench.results else None
    if ra is not None or rb is not None:
        for metric, attr in (
            ("client duration s", "duration_s"),
            ("client output tok/s", "output_tok_s"),
            ("client mean TTFT ms", "mean_ttft_ms"),
            ("client P50 TTFT ms", "median_ttft_ms"),
            ("client P99 TTFT ms", "p99_ttft_ms"),
            ("client mean TPOT ms", "mean_tpot_ms"),
            ("client P50 TPOT ms", "median_tpot_ms"),
            ("client P99 TPOT ms", "p99_tpot_ms"),
            ("client mean E2E ms", "mean_e2e_ms"),
        ):
            va, vb = getattr(ra, attr, None), getattr(rb, attr, None)
            if va is not None or vb is not None:
                rows.append(Row(metric=metric, base=va, other=vb))
        rows.append(
            Row(
                metric="client figures failing a sanity check",
                base=len(ra.sanity.violations) if ra is not None else None,
                other=len(rb.sanity.violations) if rb is not None else None,
            )
        )
    return rows


def _served(run: RunLike | RunData) -> RunLike | RunData:
    """The run's last lifetime that served traffic (``logscope.api.Run.lifetime``), else the run."""
    pick = getattr(run, "lifetime", None)
    return pick() if callable(pick) else run


def _side(
    run: RunLike | RunData, metrics: Sequence[str] = ()
) -> tuple[RunLike | RunData, RunData, Report, Side]:
    run = _served(run)
    data = RunData.of(run)
    rep = build_report(run)
    ms = None
    if metrics:
        from logscope.analyses.metrics import metrics_section
        from logscope.parsers.prometheus import read_metrics

        res = metrics_section(read_metrics(list(metrics)), data.events)
        if isinstance(res, NotApplicable):
            rep.not_applicable["metrics"] = res.reason
        else:
            rep.metrics = ms = res
    return run, data, rep, Side(data, rep, ms)


def compare(
    run_a: RunLike | RunData,
    run_b: RunLike | RunData,
    labels: list[str] | tuple[str, ...] | None = None,
    *,
    threshold_pct: float = DEFAULT_THRESHOLD_PCT,
    metrics: tuple[Sequence[str], Sequence[str]] | None = None,
) -> Comparison:
    """Compare two runs: BASE (``run_a``) and OTHER (``run_b``). A run whose input holds several server
    lifetimes is compared by its last lifetime that served traffic (``Run.lifetime()``). ``metrics``:
    each side's saved Prometheus scrapes; ``threshold_pct``: the verdicts' threshold (percent)."""
    return compare_runs(
        [run_a],
        [run_b],
        labels,
        threshold_pct=threshold_pct,
        metrics=None if metrics is None else ([metrics[0]], [metrics[1]]),
    )


def compare_runs(
    base_runs: Sequence[RunLike | RunData],
    other_runs: Sequence[RunLike | RunData],
    labels: list[str] | tuple[str, ...] | None = None,
    *,
    threshold_pct: float = DEFAULT_THRESHOLD_PCT,
    metrics: tuple[Sequence[Sequence[str]], Sequence[Sequence[str]]] | None = None,
) -> Comparison:
    """Compare BASE's runs with OTHER's (repeats of each setup): the sections side by side for the first
    run of each side, the verdicts over all of them (the runs are the samples). ``metrics``: each run's
    saved Prometheus scrapes, by side, in the order of the runs."""
    if not base_runs or not other_runs:
        raise ValueError("compare needs at least one run per side")
    mb, mo = metrics or ((), ())
    sides_b = [_side(r, mb[i] if i < len(mb) else ()) for i, r in enumerate(base_runs)]
    sides_o = [_side(r, mo[i] if i < len(mo) else ()) for i, r in enumerate(other_runs)]
    (_, da, a, _), (_, db, b, _) = sides_b[0], sides_o[0]
    names = list(labels or [])
    for i, d in enumerate((da, db)):
        if len(names) <= i:
            names.append(d.files[0].rsplit("/", 1)[-1] if d.files else ("base", "other")[i])
    if names[0] == names[1]:
        names = [f"{names[0]} (base)", f"{names[1]} (other)"]
    sections = {
        s: {"base": a.to_dict()[s], "other": b.to_dict()[s]}
        for s in (*SECTIONS, "bench", "decode_under_load")
    }
    if a.metrics is not None or b.metrics is not None:
        sections["metrics"] = {"base": a.to_dict()["metrics"], "other": b.to_dict()["metrics"]}
    na = {
        s: {k: v for k, v in (("base", a.not_applicable.get(s)), ("other", b.not_applicable.get(s))) if v}
        for s in (*SECTIONS, "decode_under_load", "metrics")
        if s in a.not_applicable or s in b.not_applicable
    }
    diffs = _differences(da, db)
    deg = _degradation(a, b, da, db)
    ctx = deg.context_ratio if deg.context_ratio is not None else _context_ratio(a, b, da, db)
    reasons = not_ab(da, db, a, b, ctx, _norm, COMPARED)
    warning = None
    if reasons:
        warning = (
            "Not an A/B test of one change: " + "; ".join(r.reason for r in reasons) + ". The ratios mix "
            "the effect of the context length with the effect of these differences."
        )
        said = {r.setting for r in reasons} | (
            {*SPEC} if any(r.category == "speculative decoding" for r in reasons) else set()
        )
        one_sided = [d.label for d in diffs if not d.both_printed and d.setting not in said]
        if one_sided:
            warning += f" Printed by one log only: {', '.join(one_sided)}."
    block = [r.reason for r in reasons] + _within(sides_b, "BASE") + _within(sides_o, "OTHER")
    ver = verdicts([s for *_, s in sides_b], [s for *_, s in sides_o], threshold_pct, block, ctx)
    runs = {}
    if len(sides_b) > 1 or len(sides_o) > 1:
        runs = {"base": [d.files for _, d, _, _ in sides_b], "other": [d.files for _, d, _, _ in sides_o]}
    cmp = Comparison(
        base=RunInfo(label=names[0], engine=da.engine, engine_version=da.engine_version, files=da.files),
        other=RunInfo(label=names[1], engine=db.engine, engine_version=db.engine_version, files=db.files),
        labels=names[:2],
        degradation=deg,
        sections=sections,
        not_applicable=na,
        summary=_summary(a, b),
        config_differences=diffs,
        warning=warning,
        not_ab=reasons,
        verdicts=ver,
        runs=runs,
    )
    cmp._reports = {"base": [r for _, _, r, _ in sides_b], "other": [r for _, _, r, _ in sides_o]}
    return cmp


def _within(sides: Sequence[tuple[Any, RunData, Report, Side]], role: str) -> list[str]:
    """Why the runs of one side are not repeats of one setup (``not_ab`` between its first run and each other)."""
    out = []
    _, d0, r0, _ = sides[0]
    for i, (_, d, r, _) in enumerate(sides[1:], start=2):
        for x in not_ab(d0, d, r0, r, None, _norm, COMPARED):
            out.append(f"{role} run {i} differs from its run 1: {x.reason}")
    return out
