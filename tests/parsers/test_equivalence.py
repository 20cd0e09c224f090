"""The compiled fast path and the pyparsing definition must give identical events.

Run on every line of every fixture log, and on text hypothesis builds from real lines and from noise.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logscope.parsers import detect, dialect
from logscope.parsers.common import KV_CAPACITY_DETAIL, OOM_DETAIL
from logscope.parsers.framing import read_lines
from logscope.parsers.pipeline import Parser
from tests.conftest import FIXTURES

LOGS = sorted(p for p in FIXTURES.rglob("*.log"))


def _grammars() -> list:  # type: ignore[type-arg]
    out = [OOM_DETAIL, KV_CAPACITY_DETAIL]
    for name in ("vllm", "sglang", None):
        try:
            out.extend(dialect(name).grammars)
        except ValueError:
            continue
    return out


GRAMMARS = _grammars()


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fast_path_equals_pyparsing_on_fixtures(path: Path) -> None:
    engine = detect(read_lines(str(path)))
    fast = [e.model_dump() for e in Parser(dialect(engine)).events(read_lines(str(path)))]
    ref = [e.model_dump() for e in Parser(dialect(engine), reference=True).events(read_lines(str(path)))]
    assert len(fast) == len(ref)
    for a, b in zip(fast, ref, strict=True):
        assert _same(a, b), (a, b)


def _real_lines() -> list[str]:
    out: list[str] = []
    for p in LOGS[:60]:
        for ln in read_lines(str(p)):
            if 10 < len(ln.text) < 600:
                out.append(ln.text)
    return out[::7] or ["x"]


REAL = _real_lines()


def _message(text: str) -> str:
    # strip an engine header if there is one, so the grammars see the message
    for name in ("vllm", "sglang"):
        try:
            parsed = dialect(name).header(text)
        except ValueError:
            continue
        if parsed is not None:
            return parsed[1]
    return text


mutated = st.builds(
    lambda line, cut, junk, pos: (lambda m: m[:cut] + junk + m[cut + pos:])(_message(line)),
    st.sampled_from(REAL),
    st.integers(0, 300),
    st.text(alphabet="0123456789.,:% -x\nabcGiB", max_size=6),
    st.integers(0, 4),
)


@settings(max_examples=int(__import__("os").environ.get("LOGSCOPE_HYPOTHESIS_EXAMPLES", "400")), deadline=None)
@given(text=st.one_of(mutated, st.text(max_size=200)))
def test_fast_path_equals_pyparsing_on_generated_text(text: str) -> None:
    for g in GRAMMARS:
        a = g.match(text)
        b = g.match_pp(text)
        assert _same(a, b), (g.name, text, a, b)
