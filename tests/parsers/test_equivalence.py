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


def _shapes_of(g: object) -> list:  # type: ignore[type-arg]
    """The shape caches of a grammar's field lists (``Many``)."""
    _rx, groups, _each = g._compiled  # type: ignore[attr-defined]
    out = []
    for _g, _name, conv in groups:
        code = getattr(conv, "__code__", None)
        if code is None:
            continue
        cells = dict(zip(code.co_freevars, conv.__closure__ or (), strict=False))
        if "shapes" in cells and cells["shapes"].cell_contents is not None:
            out.append(cells["shapes"].cell_contents)
    return out


def test_learned_shapes_split_like_the_general_loop() -> None:
    """Field lists in orders a log has not shown must not be misread by a shape learned before.

    Real SGLang batch lines and vLLM stats lines teach the shapes; then each line is re-read with
    two items swapped, one item doubled and one dropped: pyparsing (no shapes) must agree each time.
    """
    checked = 0
    for engine in ("sglang", "vllm"):
        d = dialect(engine)
        lines = [m for m in (_message(t) for t in REAL) if any(_shapes_of(g) for g in d.candidates(m))]
        for text in lines:
            for g in d.candidates(text):
                g.match(text)
        for text in lines:
            items = text.split(", ")
            variants = [text]
            for i in range(1, len(items) - 1):
                variants.append(", ".join([*items[:i], items[i + 1], items[i], *items[i + 2:]]))
                variants.append(", ".join([*items[: i + 1], items[i], *items[i + 1:]]))
                variants.append(", ".join([*items[:i], *items[i + 1:]]))
            for v in variants:
                for g in d.candidates(v):
                    assert _same(g.match(v), g.match_pp(v)), (g.name, v)
                    checked += 1
    known = [s for e in ("sglang", "vllm") for g in dialect(e).grammars for s in _shapes_of(g) if s.known]
    assert known and checked > 1000, (len(known), checked)


def test_written_out_extractors_equal_the_generic_loop() -> None:
    """Each grammar's generated field extractor gives what the generic group loop gives, line by line."""
    from logscope.parsers.grammar import match_loop

    matched = 0
    texts = {_message(ln.text) for p in LOGS for ln in read_lines(str(p))}
    for text in sorted(texts):
        for g in GRAMMARS:
            if not any(a in text for a in g.anchors):
                continue
            a, b = g.match(text), match_loop(g, text)
            assert _same(a, b), (g.name, text, a, b)
            matched += a is not None
    assert matched > 1500, matched


def test_shapes_narrowed_to_keys_read_like_pyparsing() -> None:
    """SGLang batch items are ``Keyed`` leaves: a learned shape fixes the key each item took. A line
    whose items carry other keys of the same table (same branch, different key) must not be read by
    it as if it had the learned keys: each item's key is swapped for every other key of its table,
    and the fast path must agree with pyparsing each time."""
    from logscope.parsers.grammar import Keyed

    d = dialect("sglang")
    lines = [m for m in (_message(t) for t in REAL) if m.startswith(("Decode batch", "Prefill batch"))]
    assert lines
    for text in lines:
        for g in d.candidates(text):
            g.match(text)
    narrowed = [rx.pattern for g in d.grammars for s in _shapes_of(g) for rx, _read in s.known]
    assert any(r"\#running\-req:\ (" in p for p in narrowed), narrowed[:1]
    leaves = [a for g in d.grammars for a in _keyed_leaves(g.expr) if isinstance(a, Keyed)]
    tables = {tuple(k for k, _f in leaf.table) for leaf in leaves}
    assert len(tables) >= 2
    checked = 0
    for text in lines[:40]:
        for keys in tables:
            for key in keys:
                if f"{key}: " not in text:
                    continue
                for other in keys:
                    v = text.replace(f"{key}: ", f"{other}: ", 1)
                    for g in d.candidates(v):
                        assert _same(g.match(v), g.match_pp(v)), (g.name, v)
                        checked += 1
    assert checked > 500, checked


def _keyed_leaves(node: object) -> list[object]:
    """Every leaf under a grammar node (``Seq``/``Alt`` items, ``Opt``/``Many`` item)."""
    kids = list(getattr(node, "items", ())) + [getattr(node, "item", None)]
    return [node, *(leaf for k in kids if k is not None for leaf in _keyed_leaves(k))]
