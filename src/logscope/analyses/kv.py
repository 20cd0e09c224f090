"""KV pool audit: what the engine allocated, how many full-length requests fit, and whether the
memory budget was over-committed.

- Pools: every ``kv_cache_pool`` line (vLLM ``GPU KV cache size``, SGLang ``KV Cache is allocated``,
  draft and Mamba/SWA pools), one entry per distinct pool and size, with the ranks that printed it.
  The main pool is the last ``kv``/``full`` pool printed (SGLang's post-capture sizing replaces its
  upper bound).
- Max model len: the configuration (vLLM ``max_model_len``, SGLang ``context_length``/``context_len``)
  or vLLM's ``Maximum concurrency for N tokens per request``.
- Max concurrency: vLLM's printed figure, else pool tokens / max model len. A pool smaller than one
  full-length request is a shortfall: 1 - tokens / max model len.
- Over-commit: vLLM's own ``--kv-cache-memory=`` suggestion (the KV size that fits the requested
  utilization) against the KV memory in use; and the sum weights + non-torch + activation peak +
  CUDA graphs + KV against utilization x total memory.
- ``max_running_requests``: SGLang's summary line, with the warnings that explain who capped it.
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.base import NotApplicable, Result, RunData, bursts, r

_MAIN = ("kv", "full")
_CAPS = (
    (
        re.compile(r"max_running_requests is capped to (\d+) by the mamba state cache"),
        "capped to {0} by the Mamba state cache",
    ),
    (
        re.compile(r"Max running requests is reset to (\d+) for speculative decoding"),
        "reset to {0} for speculative decoding",
    ),
    (re.compile(r"max_running_requests (\d+) -> (\d+)"), "post-capture KV sizing: {0} -> {1}"),
)


class Pool(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pool: str
    tokens: int | None = None
    memory_gib: float | None = None
    k_gib: float | None = None
    v_gib: float | None = None
    gpu_blocks: int | None = None
    device: str | None = None
    seen: int = Field(1, description="lines that printed this pool (one per rank)")
    ranks: list[int] = Field(default_factory=list)
    line: int = 0


class MemoryBudget(BaseModel):
    """The engine's own memory figures (GiB), merged from its profiling lines."""

    model_config = ConfigDict(extra="forbid")

    total_gib: float | None = None
    gpu_memory_utilization: float | None = None
    requested_gib: float | None = None
    weights_gib: float | None = None
    non_torch_gib: float | None = None
    consumed_gib: float | None = None
    activation_peak_gib: float | None = None
    cuda_graph_gib: float | None = None
    kv_cache_gib: float | None = None
    suggested_kv_cache_bytes: int | None = None
    suggested_kv_cache_gib: float | None = None
    available_gib: float | None = Field(None, description="free device memory left after start-up (SGLang)")


class KvPool(Result):
    pools: list[Pool]
    tokens: int | None
    memory_gib: float | None
    max_model_len: int | None
    max_concurrency: float | None
    max_concurrency_source: str | None = None
    shortfall_pct: float | None = Field(None, description="how far the pool is from one full-length request")
    overcommit_gib: float | None = Field(
        None, description="KV in use minus the KV that fits the memory budget"
    )
    overcommit_from_sum_gib: float | None = None
    max_running_requests: int | None = None
    max_running_requests_notes: list[str] = Field(default_factory=list)
    memory: MemoryBudget | None = None
    notes: list[str] = Field(default_factory=list)


def _pools(df: pl.DataFrame) -> list[Pool]:
    out: dict[tuple[Any, ...], Pool] = {}
    for row in df.sort("seq").iter_rows(named=True):
        mem = row["memory_gib"]
        if mem is None and row["k_gib"] is not None and row["v_gib"] is not None:
            mem = round(row["k_gib"] + row["v_gib"], 4)
        key = (row["pool"], row["tokens"], mem, row["gpu_blocks"], row["device"])
        rank = row["tp_rank"] if row["tp_rank"] is not None else row["dp_rank"]
        if key in out:
            p = out[key]
            ranks = sorted({*p.ranks, rank}) if rank is not None else p.ranks
            out[key] = p.model_copy(update={"seen": p.seen + 1, "ranks": ranks})
        else:
            out[key] = Pool(
                pool=row["pool"],
                tokens=row["tokens"],
                memory_gib=mem,
                k_gib=row["k_gib"],
                v_gib=row["v_gib"],
                gpu_blocks=row["gpu_blocks"],
                device=row["device"],
                ranks=[rank] if rank is not None else [],
                line=row["line"],
            )
    return list(out.values())


def _label_draft(data: RunData, pools: pl.DataFrame) -> pl.DataFrame:
    """Rename KV pools printed after a second weight load (the draft model's, which SGLang loads after
    the target with no other marker) to ``draft``."""
    loads = data.frame("model_load").filter(pl.col("t_s").is_not_null()).sort("seq")
    if loads.height == 0 or pools.height == 0:
        return pools
    groups = bursts(loads["t_s"].to_list())
    if len(groups) < 2:
        return pools
    start = int(loads["seq"][groups[1][0]])
    return pools.with_columns(
        pl.when((pl.col("seq") > start) & pl.col("pool").is_in(_MAIN))
        .then(pl.lit("draft"))
        .otherwise(pl.col("pool"))
        .alias("pool")
    )


def _budget(df: pl.DataFrame) -> MemoryBudget | None:
    if df.height == 0:
        return None
    vals: dict[str, Any] = {}
    for name in MemoryBudget.model_fields:
        if name not in df.columns:
            continue
        col = df.sort("seq")[name].drop_nulls()
        if col.len():
            vals[name] = col[-1]
    return MemoryBudget(**vals) if vals else None


def kv_pool(data: RunData) -> KvPool | NotApplicable:
    """The KV pool audit of the run (see the module docstring)."""
    pools_df = data.frame("kv_cache_pool")
    budget = _budget(data.frame("memory_profile"))
    loads = data.frame("model_load").filter(pl.col("memory_gib").is_not_null()).sort("seq")
    limits_mem = data.frame("scheduler_limits")["available_gpu_mem_gib"].drop_nulls()
    extra: dict[str, Any] = {}
    if loads.height and (budget is None or budget.weights_gib is None):
        extra["weights_gib"] = float(loads["memory_gib"][0])  # the target model's load comes first
    if limits_mem.len():
        extra["available_gib"] = float(limits_mem[-1])
    if extra:
        budget = budget.model_copy(update=extra) if budget is not None else MemoryBudget(**extra)
    cap = data.frame("kv_capacity")
    limits = data.frame("scheduler_limits").sort("seq")
    if pools_df.height == 0 and budget is None and cap.height == 0 and limits.height == 0:
        return NotApplicable(
            reason="no KV pool, memory profiling or KV capacity lines (the engine did not get that far, "
            "or its log level hid them)"
        )
    pools_df = _label_draft(data, pools_df)
    pools = _pools(pools_df)
    method: list[str] = []
    notes: list[str] = []
    main_rows = pools_df.filter(pl.col("pool").is_in(_MAIN) & pl.col("tokens").is_not_null()).sort("seq")
    tokens: int | None = None
    main_pool: str | None = None
    if limits.height:  # SGLang's summary: the target model's pool, after any post-capture resizing
        tokens = int(limits["max_total_num_tokens"][-1])
        main_pool = str(main_rows["pool"][-1]) if main_rows.height else "kv"
        main_rows = main_rows.filter(pl.col("tokens") == tokens)
        how = f"max_total_num_tokens of the scheduler summary (line {limits['line'][-1]})"
    elif main_rows.height:
        tokens, main_pool = int(main_rows["tokens"][-1]), str(main_rows["pool"][-1])
        how = f"the last {main_pool!r} pool line (line {main_rows['line'][-1]})"
    memory = None
    if main_rows.height:
        row = main_rows.row(main_rows.height - 1, named=True)
        memory = row["memory_gib"]
        if memory is None and row["k_gib"] is not None and row["v_gib"] is not None:
            memory = round(row["k_gib"] + row["v_gib"], 4)
    if memory is None and budget is not None:
        memory = budget.kv_cache_gib
    if tokens is not None:
        method.append(f"KV tokens {tokens:,} from {how}")

    mml = data.settings.int("max_model_len")
    if mml is not None:
        method.append(f"max model len {mml:,} from line {data.settings.lines.get('max_model_len')}")
    conc_df = data.frame("max_concurrency").sort("seq")
    conc: float | None = None
    conc_src = None
    if conc_df.height:
        row = conc_df.row(conc_df.height - 1, named=True)
        conc, conc_src = float(row["concurrency"]), f"printed by the engine (line {row['line']})"
        if mml is None:
            mml = int(row["tokens_per_request"])
    elif tokens is not None and mml:
        conc, conc_src = round(tokens / mml, 4), "pool tokens / max model len"
    shortfall = None
    printed_fits = (
        conc is not None
        and conc >= 1.0
        and conc_df.height > 0
        and int(conc_df["tokens_per_request"][-1]) == mml
    )
    if tokens is not None and mml and tokens < mml and printed_fits:
        # hybrid models (sliding window, linear attention) need fewer pool tokens than the length:
        # the engine's own concurrency figure is the authority, not the raw token count
        notes.append(
            f"the pool ({tokens:,} tokens) is smaller than the max model len ({mml:,}), but the engine "
            f"itself says {conc:g} full-length requests fit (hybrid or windowed layers): no shortfall claimed"
        )
    elif tokens is not None and mml and tokens < mml:
        shortfall = round((1 - tokens / mml) * 100, 2)
        notes.append(
            f"the pool ({tokens:,} tokens) is {shortfall:g} % short of one full-length request ({mml:,}): "
            "a request of the maximum length cannot fit"
        )
    if cap.height:
        row = cap.sort("seq").row(0, named=True)
        need, est = row["max_seq_len"], row["estimated_max_len"] or row["kv_tokens"]
        if need and est and shortfall is None:
            shortfall = round((1 - est / need) * 100, 2)
            mml = mml or int(need)
            method.append(
                f"shortfall from the start-up failure at line {row['line']}: the KV cache holds {est:,} "
                f"tokens against a max seq len of {need:,}"
            )
        notes.append(
            f"start-up failed: one request of the max length does not fit the KV cache (line {row['line']})"
        )

    over = over_sum = None
    if budget is not None:
        kv = budget.kv_cache_gib if budget.kv_cache_gib is not None else memory
        if budget.suggested_kv_cache_bytes is not None and kv is not None:
            fit = budget.suggested_kv_cache_bytes / 2**30
            over = round(kv - fit, 2)
            method.append(
                f"over-commit = KV in use {kv:g} GiB - vLLM's suggested --kv-cache-memory="
                f"{budget.suggested_kv_cache_bytes} ({fit:.2f} GiB, what fits the requested utilization)"
            )
        base = (
            [budget.consumed_gib]
            if budget.consumed_gib is not None
            else [budget.weights_gib, budget.non_torch_gib]
        )
        parts = [*base, budget.activation_peak_gib, budget.cuda_graph_gib, kv]
        requested = budget.requested_gib
        if requested is None and budget.total_gib is not None and budget.gpu_memory_utilization is not None:
            requested = budget.total_gib * budget.gpu_memory_utilization
        if requested is not None and all(p is not None for p in parts):
            used = sum(p for p in parts if p is not None)
            over_sum = round(used - requested, 2)
            method.append(
                f"sum check: weights + non-torch ({sum(p for p in base if p is not None):.2f}) + activation "
                f"peak + CUDA graphs + KV = {used:.2f} GiB "
                f"against utilization x total = {requested:.2f} GiB"
            )
        if over is None and over_sum is not None:
            over = over_sum
    if over is not None and over > 0:
        notes.append(
            f"KV cache over-committed by {over:g} GiB: lower the memory utilization or pin --kv-cache-memory"
        )

    mrr = None
    mrr_notes: list[str] = []
    if limits.height:
        v = limits["max_running_requests"].drop_nulls()
        mrr = int(v[-1]) if v.len() else None
    if mrr is None and data.engine == "vllm":
        mrr = data.settings.int("max_num_seqs")
    for e in data.events:
        if e.kind not in ("warning", "unparsed", "config"):
            continue
        text = getattr(e, "message", None) or getattr(e, "text", None) or e.raw
        if not isinstance(text, str) or "unning" not in text:
            continue
        for rx, fmt in _CAPS:
            m = rx.search(text)
            if m:
                note = f"max_running_requests {fmt.format(*m.groups())} (line {e.line})"
                if note.split(" (line")[0] not in [n.split(" (line")[0] for n in mrr_notes]:
                    mrr_notes.append(note)
    if mrr is not None:
        method.append(
            "max_running_requests from the scheduler summary line"
            if limits.height
            else "max running requests from max_num_seqs in the configuration"
        )

    if tokens:
        dcp = data.settings.int("decode_context_parallel")
        for p in pools:
            if p.tokens and p.pool not in _MAIN and p.tokens % tokens == 0 and p.tokens // tokens >= 2:
                n = p.tokens // tokens
                why = " (the DCP size)" if dcp == n else ""
                notes.append(
                    f"{p.pool} pool {p.tokens:,} tokens = {n} x the {main_pool} pool {tokens:,}{why}"
                )
    method_text = "; ".join(method) if method else "pool lines only"
    return KvPool(
        method=method_text + ".",
        pools=pools,
        tokens=tokens,
        memory_gib=r(memory, 2),
        max_model_len=mml,
        max_concurrency=conc,
        max_concurrency_source=conc_src,
        shortfall_pct=shortfall,
        overcommit_gib=over,
        overcommit_from_sum_gib=over_sum,
        max_running_requests=mrr,
        max_running_requests_notes=mrr_notes,
        memory=budget,
        notes=notes,
    )
