"""AR01: custom all-reduce is off; tensor-parallel all-reduces go through NCCL."""

from __future__ import annotations

import re
from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import Finding
from logscope.digest.registry import Rule, register
from logscope.digest.rules._shared import hits_events, plural, ranks_text

_PATTERN = re.compile(
    r"Custom allreduce is disabled (?:because |due to )?(?P<why>[^.\n]*)"
    r"|Setup Custom allreduce failed with (?P<err>[^\n]*?)(?:\. To silence|$)"
    r"|All-reduce call path: NCCL \(custom AR disabled\)"
)


@register
class CustomAllReduceDisabled(Rule):
    """Custom all-reduce is disabled: tensor-parallel all-reduces use NCCL.

    What
        vLLM and SGLang ship a custom all-reduce kernel for tensor parallelism within one node
        (NVLink or two PCIe GPUs). When it cannot be used each TP rank says why: ``Custom allreduce
        is disabled because this process group spans across nodes`` / ``because it's not supported
        on more than two PCIe-only GPUs`` / ``because your platform lacks GPU P2P capability or P2P
        test failed`` / ``due to an unsupported world size``, ``because of missing custom allreduce
        library``; SGLang also ``Setup Custom allreduce failed with ...`` and ``[AR] All-reduce call
        path: NCCL (custom AR disabled)``.

    Why
        The custom kernel is faster than NCCL for the small all-reduces of decode steps; without it
        every layer's all-reduce costs more and decode throughput drops, most at low batch sizes.
        Across nodes or on PCIe-only machines with more than two GPUs this is expected; on an NVLink
        machine it usually means P2P access is broken (containers, drivers, IOMMU settings).

    Fix
        On one NVLink node, check P2P access (``nvidia-smi topo -m``, the container's IPC and device
        settings) and use a supported TP size; where it cannot work (several nodes, PCIe-only),
        set ``--disable-custom-all-reduce`` to make it explicit and silence the warning.

    References
        - vLLM / SGLang ``distributed/device_communicators/custom_all_reduce.py``
    """

    code = "AR01"
    slug = "custom-allreduce-disabled"
    title = "Custom all-reduce disabled"
    severity = "info"
    confidence = "observed"
    kinds = ("warning", "unparsed")
    anchors = ("Custom allreduce", "custom AR disabled")

    def check(self, ctx: Context) -> Iterable[Finding]:
        hits = ctx.grep(_PATTERN, self.anchors)
        if not hits:
            return []
        reasons: list[str] = []
        for h in hits:
            why = (h.match.group("why") or h.match.group("err") or "").strip()
            why = why or "the log gives no reason"
            if why not in reasons:
                reasons.append(why)
        events = hits_events(hits)
        n = sum(e.repeated for e in events)
        msg = (
            f"Custom all-reduce is disabled ({'; '.join(reasons[:3])}): tensor-parallel all-reduces go through "
            f"NCCL, slower for the small messages of decode ({plural(n, 'line')}{ranks_text(events)}; line "
            f"{events[0].line})."
        )
        if any("across nodes" in r or "PCIe" in r for r in reasons):
            fix = (
                "Expected across nodes and on PCIe-only machines: pass `--disable-custom-all-reduce` to make it "
                "explicit; keep TP within one NVLink node where you can."
            )
        else:
            fix = (
                "Check P2P access between the GPUs (`nvidia-smi topo -m`, the container's IPC and device settings) "
                "and use a supported TP size; where it cannot work, pass `--disable-custom-all-reduce`."
            )
        return [self.finding(msg, fix, events, [(h.event, h.text) for h in hits])]
