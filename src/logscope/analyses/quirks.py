"""Version quirks as data: where an engine version is known to count differently, the analysis says so.

Counts that do not add up across versions recur in the trackers. Each row of ``QUIRKS`` names the engine,
the versions (``since`` inclusive, ``until`` exclusive, either open), the report section whose numbers
it touches, the sentence appended to that section's method, and where the fact comes from. Adding a
quirk is adding a row; no analysis has version branches of its own. A log whose version is unknown
gets no sentence (the quirk may or may not apply, and the report does not guess).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Quirk:
    engine: str
    section: str
    text: str
    source: str
    since: tuple[int, ...] | None = None
    until: tuple[int, ...] | None = None


QUIRKS: tuple[Quirk, ...] = (
    Quirk(
        "vllm",
        "prefill",
        since=(0, 16, 0),
        text="This vLLM version's prompt throughput counts computed prompt tokens only: prefix-cache hits and "
        "transferred tokens are not in it (since 2026-02-04, vllm#33290, first released in 0.16.0).",
        source="formats/vllm.md, the stats line's semantics",
    ),
    Quirk(
        "vllm",
        "prefill",
        until=(0, 16, 0),
        text="This vLLM version's prompt throughput counts every scheduled prompt token, prefix-cache hits "
        "included (computed tokens only from 0.16.0, vllm#33290): compare with newer logs with care.",
        source="formats/vllm.md, the stats line's semantics",
    ),
    Quirk(
        "sglang",
        "prefill",
        since=(0, 5, 8),
        until=(0, 5, 10),
        text="SGLang releases around the Feb 2026 fix (sglang#18570; 0.5.8-0.5.9, inferred from the release "
        "dates) could log a prefill batch's stats twice in overlap mode and lose the previous batch's, so "
        "prefill lines may over- and under-count.",
        source="sglang#18570 (merged 2026-02-10): 'the first batch's stats would be lost, and the second "
        "batch's stats would be logged twice'",
    ),
)


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    """``(0, 5, 9)`` from ``"0.5.9"``, ``"v0.32.0"``, ``"0.5.3.post1"``; None when there is no version."""
    m = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", (text or "").strip())
    return None if m is None else tuple(int(x or 0) for x in m.groups())


def quirks_for(engine: str | None, version: str | None, section: str) -> list[Quirk]:
    """The quirks of ``section`` that apply to this engine version (none when the version is unknown)."""
    v = version_tuple(version)
    if engine is None or v is None:
        return []
    return [
        q
        for q in QUIRKS
        if q.engine == engine
        and q.section == section
        and (q.since is None or v >= q.since)
        and (q.until is None or v < q.until)
    ]


__all__ = ["QUIRKS", "Quirk", "quirks_for", "version_tuple"]
