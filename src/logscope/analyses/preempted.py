"""Preempted requests: which request was preempted, where, and in which stats window.

"Which request was preempted, and how much work was lost?" Only vLLM V0 names them: its scheduler logs
``Sequence group <request id> is preempted by PreemptionMode.RECOMPUTE mode because there is not enough
KV cache space ... total_num_cumulative_preemption=N`` (from 0.4.3, May 2024, until V0's removal), and
only for the 1st, 51st, 101st ... preemption, so the list names the logged ones, not every one. Each
entry gives the request id, its line, the stats line of the window it fell in (the next stats line of
the same file; null when the log ends first) and the tokens the request had generated (null: no
version prints them with the preemption).

The others cannot name them, and say so with ``null`` and a reason, never an empty list that would read
as "none": vLLM V1 logs no per-request preemption line (only ``Preemptions: N`` in the stats line since
2025-11-14, and the ``vllm:num_preemptions`` counter); SGLang's retraction line counts the retracted
requests (``#retracted_reqs``) without their ids. A V0 log without a preemption line gives an empty list
only when its version is known to print the line (0.4.3 or later): the first preemption is always logged.
"""

from __future__ import annotations

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.base import NotApplicable, RunData
from logscope.analyses.quirks import version_tuple

V0_LINE_SINCE = (0, 4, 3)


class PreemptedRequest(BaseModel):
    """One request a preemption line names."""

    model_config = ConfigDict(extra="forbid")

    request_id: str
    line: int = Field(description="the preemption line")
    window_line: int | None = Field(
        None,
        description="the stats line of the window the preemption fell in (the next "
        "one in the same file); null when the log ends first",
    )
    generated_tokens: int | None = Field(
        None, description="tokens the request had generated; null: the log does not print them"
    )
    file: str
    mode: str | None = Field(None, description="RECOMPUTE or SWAP, as printed")
    cumulative: int | None = Field(None, description="the total number of preemptions so far, as printed")


def preempted_requests(data: RunData) -> list[PreemptedRequest] | NotApplicable:
    """The requests the log names as preempted (see the module docstring)."""
    pre = data.frame("preemption").filter(pl.col("request_id").is_not_null())
    tp = data.frame("throughput")
    if pre.height:
        stats = tp.select("seq", "file", "line").sort("seq")
        joined = pre.sort("seq").join_asof(
            stats.rename({"seq": "wseq", "line": "window_line"}),
            left_on="seq",
            right_on="wseq",
            by="file",
            strategy="forward",
            check_sortedness=False,
        )  # both sorted by seq above
        return [
            PreemptedRequest(
                request_id=row["request_id"],
                line=row["line"],
                window_line=row["window_line"],
                file=row["file"],
                mode=row["mode"],
                cumulative=row["count"],
            )
            for row in joined.iter_rows(named=True)
        ]
    if (
        data.engine == "sglang"
        or data.frame("decode_batch").height
        or data.frame("prefill_batch").height
        or data.frame("retract").height
    ):
        return NotApplicable(
            reason="SGLang names no preempted request: its retraction line counts them "
            "(#retracted_reqs) without their ids"
        )
    if not tp.height:
        return NotApplicable(reason="no vLLM stats line or preemption line to tell preemptions from")
    v0 = tp["swapped"].is_not_null().any()  # the V0 stats line prints Swapped / Pending
    if not v0:
        return NotApplicable(
            reason="vLLM V1 prints no per-request preemption line (only the stats line's "
            "'Preemptions: N' since 2025-11-14 and the vllm:num_preemptions counter): "
            "the preempted requests cannot be named from the log"
        )
    version = version_tuple(data.engine_version)
    if version is None or version < V0_LINE_SINCE:
        return NotApplicable(
            reason="no preemption line, and the log does not show a vLLM version that prints one "
            "(V0 from 0.4.3 logs 'Sequence group ... is preempted'): unknown, not none"
        )
    return []


__all__ = ["PreemptedRequest", "preempted_requests"]
