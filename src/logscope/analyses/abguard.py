"""Why two runs are not an A/B test of one change (``Comparison.not_ab``).

``compare`` answers "how much slower does OTHER decode than BASE", and that ratio is read as the
effect of the one thing the user varied. What ``compare`` treats as the variable under test is the
**context length**: the mean input tokens per request (from the clients' results, ``compare --bench``)
and the ``max_model_len`` raised with it. A context difference is the experiment, reported as
``degradation.context_ratio``, never as a reason here. Everything else that differs is a reason
why the ratio mixes effects:

- speculative decoding on one side only (from the configuration: vLLM prints
  ``speculative_config=None`` when it is off, and an ngram run may print no ``SpecDecoding`` line at
  all, so the lines' absence says nothing), or both sides speculating with other settings;
- different engines, or engine versions;
- parallelism (TP, DP, PP, DCP, EP);
- memory settings (memory fraction, KV cache bytes, max running requests) and the KV pool they gave
  (token counts more than ``POOL_TOLERANCE`` apart); ``max_model_len`` only when the context length
  is known and does not differ in the same direction (then it is not the experiment; with the
  context unknown, a ``max_model_len`` change is taken to be the experiment);
- other logged settings that change what decode and prefill numbers mean (KV dtype, quantization,
  chunk size, attention backend, eager mode, ...);
- with both clients' results: different workloads, i.e. output tokens per request or number of
  prompts more than ``WORKLOAD_TOLERANCE`` apart, another concurrency limit or request rate.

A setting printed by one log only is not a reason (the other log may run the default): the
comparison lists it in ``config_differences`` with ``both_printed`` false.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.base import RunData
from logscope.analyses.settings import label

WORKLOAD_TOLERANCE = 0.10  # relative difference of output length / prompts that counts as another workload
POOL_TOLERANCE = 0.10  # relative difference of KV pool tokens that counts as another memory budget

Category = Literal["speculative decoding", "engine", "parallelism", "memory", "setting", "workload"]

PARALLELISM = (
    "tensor_parallel",
    "data_parallel",
    "pipeline_parallel",
    "decode_context_parallel",
    "expert_parallel",
)
MEMORY = ("memory_fraction", "kv_cache_memory_bytes", "max_num_seqs")
SPEC = ("speculative_method", "speculative_tokens", "speculative_model")


class NotAb(BaseModel):
    """One reason why BASE and OTHER are not an A/B test of one change."""

    model_config = ConfigDict(extra="forbid")

    category: Category
    setting: str = Field(description="the canonical setting or workload figure that differs")
    reason: str = Field(description="one sentence, with both values")
    base: Any = None
    other: Any = None


def _show(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:g}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


def _gib(v: Any) -> str:
    """Bytes as GiB (``1 GiB``); a value that is not a number as printed."""
    if isinstance(v, int | float) and not isinstance(v, bool):
        return f"{v / 2**30:.3g} GiB"
    return str(v)


def _differ(da: RunData, db: RunData, name: str, norm: Any) -> tuple[Any, Any] | None:
    va, vb = da.settings.get(name), db.settings.get(name)
    if va is None or vb is None or norm(va) == norm(vb):
        return None
    return va, vb


def _spec_on(d: RunData) -> bool | None:
    """Speculative decoding configured (True), configured off (False), or the log does not say (None)."""
    on = d.settings.spec_configured()
    if on is None and d.kind_index.get("spec_decode"):
        return True  # metrics lines are printed only when drafting
    return on


def _spec(da: RunData, db: RunData, norm: Any) -> list[NotAb]:
    sa, sb = _spec_on(da), _spec_on(db)
    if sa is None or sb is None:
        return []
    if sa != sb:
        d, role = (da, "BASE") if sa else (db, "OTHER")
        what = ", ".join(f"{label(n)} {d.settings.get(n)}" for n in SPEC if d.settings.get(n) is not None)
        return [
            NotAb(
                category="speculative decoding",
                setting="speculative_decoding",
                reason=f"speculative decoding is on in {role} only"
                + (f" ({what})" if what else "")
                + ": it changes the decode rate by itself",
                base=sa,
                other=sb,
            )
        ]
    out = []
    for name in SPEC:
        pair = _differ(da, db, name, norm)
        if pair:
            out.append(
                NotAb(
                    category="speculative decoding",
                    setting=name,
                    base=pair[0],
                    other=pair[1],
                    reason=f"speculative decoding differs: {label(name)} {_show(pair[0])} vs {_show(pair[1])}",
                )
            )
    return out


def _pool_tokens(rep: Any) -> int | None:
    kv = getattr(rep, "kv_pool", None)
    return getattr(kv, "tokens", None) if kv is not None else None


def _context_direction(context_ratio: float | None) -> int:
    """+1 when OTHER serves the longer context, -1 the shorter, 0 the same or unknown."""
    if context_ratio is None or abs(context_ratio - 1) <= WORKLOAD_TOLERANCE:
        return 0
    return 1 if context_ratio > 1 else -1


def _memory(
    da: RunData, db: RunData, norm: Any, rep_a: Any, rep_b: Any, context_ratio: float | None
) -> list[NotAb]:
    out = []
    for name in MEMORY:
        pair = _differ(da, db, name, norm)
        if pair:
            shown = [_gib(norm(v)) if name == "kv_cache_memory_bytes" else _show(v) for v in pair]
            out.append(
                NotAb(
                    category="memory",
                    setting=name,
                    base=pair[0],
                    other=pair[1],
                    reason=f"{label(name)} differs: {shown[0]} vs {shown[1]}",
                )
            )
    pair = _differ(da, db, "max_model_len", norm)
    if pair:
        ma, mb = float(norm(pair[0])), float(norm(pair[1]))
        direction = 1 if mb > ma else -1
        # not raised with the context under test; with the context unknown, the benefit of the doubt
        if context_ratio is not None and _context_direction(context_ratio) != direction:
            out.append(
                NotAb(
                    category="memory",
                    setting="max_model_len",
                    base=pair[0],
                    other=pair[1],
                    reason=f"max model len differs ({_show(pair[0])} vs {_show(pair[1])}) while the "
                    f"context length served does not differ the same way ({context_ratio:g}x)",
                )
            )
    ta, tb = _pool_tokens(rep_a), _pool_tokens(rep_b)
    if (
        ta
        and tb
        and abs(ta - tb) / max(ta, tb) > POOL_TOLERANCE
        and not any(r.setting in MEMORY for r in out)
    ):
        out.append(
            NotAb(
                category="memory",
                setting="kv_pool_tokens",
                base=ta,
                other=tb,
                reason=f"the KV pools differ: {ta:,} vs {tb:,} tokens (other hardware, model or memory "
                "budget)",
            )
        )
    return out


def _workload(da: RunData, db: RunData) -> list[NotAb]:
    wa, wb = workload(da), workload(db)
    if wa is None or wb is None:
        return []
    out = []
    for key, what in (
        ("output_tokens_per_request", "output tokens per request"),
        ("prompts", "number of prompts"),
    ):
        a, b = wa.get(key), wb.get(key)
        if a and b and abs(a - b) / max(a, b) > WORKLOAD_TOLERANCE:
            out.append(
                NotAb(
                    category="workload",
                    setting=key,
                    base=a,
                    other=b,
                    reason=f"different workloads: {what} {_show(a)} vs {_show(b)}",
                )
            )
    for key, what in (("max_concurrency", "concurrency limit"), ("request_rate", "request rate (req/s)")):
        a, b = wa.get(key), wb.get(key)
        if a != b and (key != "max_concurrency" or (a is not None and b is not None)):
            shown = [("unlimited" if v is None else _show(v)) for v in (a, b)]
            out.append(
                NotAb(
                    category="workload",
                    setting=key,
                    base=a,
                    other=b,
                    reason=f"different workloads: {what} {shown[0]} vs {shown[1]}",
                )
            )
    return out


def workload(d: RunData) -> dict[str, float | None] | None:
    """The workload of the run's last client result: mean input and output tokens per request, prompts
    sent, concurrency limit, request rate (None: unlimited). None when the run holds no client result."""
    df = d.frame("bench_result")
    if not df.height:
        return None
    row = df.row(df.height - 1, named=True)
    ok = row.get("successful_requests")
    failed = row.get("failed_requests") or 0

    def per(total: float | None) -> float | None:
        return total / ok if total is not None and ok else None

    return {
        "input_tokens_per_request": per(row.get("total_input_tokens")),
        "output_tokens_per_request": per(row.get("total_output_tokens")),
        "prompts": (ok + failed) if ok is not None else None,
        "max_concurrency": row.get("max_concurrency"),
        "request_rate": row.get("request_rate"),
    }


def not_ab(
    da: RunData,
    db: RunData,
    rep_a: Any,
    rep_b: Any,
    context_ratio: float | None,
    norm: Any,
    compared: tuple[str, ...],
) -> list[NotAb]:
    """The reasons why BASE and OTHER are not an A/B test of one change (module docstring); ``norm``
    makes printed values comparable, ``compared`` names the settings ``compare`` lists."""
    out: list[NotAb] = []
    if da.engine and db.engine and da.engine != db.engine:
        out.append(
            NotAb(
                category="engine",
                setting="engine",
                base=da.engine,
                other=db.engine,
                reason=f"different engines: {da.engine} vs {db.engine}",
            )
        )
    elif da.engine_version and db.engine_version and da.engine_version != db.engine_version:
        out.append(
            NotAb(
                category="engine",
                setting="engine_version",
                base=da.engine_version,
                other=db.engine_version,
                reason=f"different engine versions: {da.engine_version} vs {db.engine_version}",
            )
        )
    out += _spec(da, db, norm)
    for name in PARALLELISM:
        pair = _differ(da, db, name, norm)
        if pair:
            out.append(
                NotAb(
                    category="parallelism",
                    setting=name,
                    base=pair[0],
                    other=pair[1],
                    reason=f"different parallelism: {label(name)} {_show(pair[0])} vs {_show(pair[1])}",
                )
            )
    out += _memory(da, db, norm, rep_a, rep_b, context_ratio)
    taken = {*PARALLELISM, *MEMORY, *SPEC, "max_model_len"}
    for name in compared:
        if name in taken:
            continue
        pair = _differ(da, db, name, norm)
        if pair:
            out.append(
                NotAb(
                    category="setting",
                    setting=name,
                    base=pair[0],
                    other=pair[1],
                    reason=f"{label(name)} differs: {_show(pair[0])} vs {_show(pair[1])}",
                )
            )
    out += _workload(da, db)
    return out
