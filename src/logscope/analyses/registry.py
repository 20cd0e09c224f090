"""The report's analyses, in one list: each one's report key, the function that computes it from a
run, its result type, and the section that shows it in the text reports.

The report (``analyses.report``: its contract sections), the digest (``Context.analysis`` and the
names a rule may require) and the renderers (``render.content``: titles, which sections are shown only
when they hold something, their figures) read this list; none of them lists the analyses again.
``tests/analyses/test_registry.py`` checks it against the ``Report`` model's fields.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Analysis:
    """One analysis of the report."""

    name: str
    """Its key in the report (docs/contract.md)."""
    result: str
    """The result type's name (the report's value is one of these, or null with the reason in
    ``not_applicable``)."""
    compute: str | None = None
    """``module:function`` computing it from ``RunData`` (and the stable decode result, when the
    function's second parameter is named for it); None when it needs more than the log (``bench``:
    the other sections; ``metrics``, ``slo``: ``Run.analyze``'s inputs)."""
    title: str | None = None
    """Its section's heading in the text, Markdown and HTML reports; None: shown by blocks of its own
    after the sections (or not at all)."""
    contract: bool = False
    """One of the contract's first sections (compared side by side by ``logscope compare``)."""
    optional: bool = False
    """Its section is shown only when the input holds it (a client's output, scrapes, stalls)."""
    figures: tuple[str, ...] = ()
    """The figures drawn next to its section (HTML)."""


# In the order the text reports show the sections.
ANALYSES: tuple[Analysis, ...] = (
    Analysis(
        "stable_decode",
        "StableDecode",
        "logscope.analyses.decode:stable_decode",
        "Stable decode",
        contract=True,
        figures=("throughput",),
    ),
    Analysis(
        "decode_under_load",
        "DecodeUnderLoad",
        "logscope.analyses.decode_load:decode_under_load",
        "Decode under load",
        optional=True,
    ),
    Analysis(
        "prefill",
        "Prefill",
        "logscope.analyses.prefill:prefill",
        "Prefill",
        contract=True,
        figures=("prefill_chunks",),
    ),
    Analysis(
        "spec_decode",
        "SpecDecode",
        "logscope.analyses.spec:spec_decode",
        "Speculative decoding",
        contract=True,
        figures=("spec_acceptance",),
    ),
    Analysis("kv_pool", "KvPool", "logscope.analyses.kv:kv_pool", "KV pool", contract=True),
    Analysis(
        "cold_start",
        "ColdStart",
        "logscope.analyses.coldstart:cold_start",
        "Cold start",
        contract=True,
        figures=("cold_start",),
    ),
    Analysis(
        "disturbances",
        "Disturbances",
        "logscope.analyses.disturbances:disturbances",
        "Disturbances",
        contract=True,
    ),
    Analysis(
        "requests",
        "RequestsSection",
        "logscope.analyses.requests:requests_section",
        "Requests",
        optional=True,
    ),
    Analysis("bench", "BenchSection", None, "Client benchmark", optional=True),
    Analysis("stalls", "Stalls", "logscope.analyses.stalls:stalls", "Stalls and hangs", optional=True),
    Analysis("ranks", "Ranks", "logscope.analyses.ranks:ranks", "Ranks", optional=True),
    Analysis(
        "metrics",
        "MetricsSection",
        None,
        "Server metrics",
        optional=True,
        figures=("metrics_latency", "metrics_load"),
    ),
    Analysis("slo", "SloSection", None, "SLO gates", optional=True),
    Analysis("kv_saturation", "KvEpisode", "logscope.analyses.kvsat:kv_saturation"),
    Analysis("effective_config", "ConfigValue", "logscope.analyses.effective:effective_config"),
    Analysis("preempted_requests", "PreemptedRequest", "logscope.analyses.preempted:preempted_requests"),
    Analysis(
        "disturbance_segments", "DisturbanceSegment", "logscope.analyses.aftermath:disturbance_segments"
    ),
)

BY_NAME: dict[str, Analysis] = {a.name: a for a in ANALYSES}

__all__ = ["ANALYSES", "BY_NAME", "Analysis"]
