"""The compiled fast path and the pyparsing definition must give identical events.

Run on every line of every fixture log, and on text hypothesis builds from real lines and from noise.
"""

from __future__ import annotations

import functools
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


@functools.cache
def _taught() -> None:
    for engine in ("vllm", "sglang"):
        _teach(engine, [_message(t) for t in REAL])


mutated = st.builds(
    lambda line, cut, junk, pos: (lambda m: m[:cut] + junk + m[cut + pos :])(_message(line)),
    st.sampled_from(REAL),
    st.integers(0, 300),
    st.text(alphabet="0123456789.,:% -x\nabcGiB", max_size=6),
    st.integers(0, 4),
)


@settings(
    max_examples=int(__import__("os").environ.get("LOGSCOPE_HYPOTHESIS_EXAMPLES", "400")), deadline=None
)
@given(text=st.one_of(mutated, st.text(max_size=200)))
def test_fast_path_equals_pyparsing_on_generated_text(text: str) -> None:
    _taught()  # the learned paths are tried first: let them exist, as after a log's first lines
    for g in GRAMMARS:
        a = g.match(text)
        b = g.match_pp(text)
        assert _same(a, b), (g.name, text, a, b)


def _paths_of(g: object) -> list:  # type: ignore[type-arg]
    """The learned paths (flat regex, reader) of a grammar (``_Traces.known``)."""
    traces = g._traces  # type: ignore[attr-defined]
    return [] if traces is None else traces.known


def _teach(engine: str, texts: list[str]) -> None:
    """Let each grammar learn the paths of ``texts`` (as a log's first lines would)."""
    d = dialect(engine)
    for text in texts:
        for g in d.candidates(text):
            g.match(text)


def test_learned_paths_read_like_pyparsing() -> None:
    """Field lists in orders a log has not shown must not be misread by a path learned before.

    Real SGLang batch lines and vLLM stats lines teach the paths; then each line is re-read with
    two items swapped, one item doubled and one dropped: pyparsing (no paths) must agree each time.
    """
    checked = 0
    for engine in ("sglang", "vllm"):
        d = dialect(engine)
        lines = [m for m in (_message(t) for t in REAL) if ", " in m and d.candidates(m)]
        _teach(engine, lines)
        for text in lines:
            items = text.split(", ")
            variants = [text]
            for i in range(1, len(items) - 1):
                variants.append(", ".join([*items[:i], items[i + 1], items[i], *items[i + 2 :]]))
                variants.append(", ".join([*items[: i + 1], items[i], *items[i + 1 :]]))
                variants.append(", ".join([*items[:i], *items[i + 1 :]]))
            for v in variants:
                for g in d.candidates(v):
                    assert _same(g.match(v), g.match_pp(v)), (g.name, v)
                    checked += 1
    known = {g.name for e in ("sglang", "vllm") for g in dialect(e).grammars if _paths_of(g)}
    assert {"sglang.decode_batch", "sglang.prefill_batch", "vllm.stats", "vllm.spec_decode_v1"} <= known, (
        known
    )
    assert checked > 1000, checked


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


def test_paths_narrowed_to_keys_read_like_pyparsing() -> None:
    """SGLang batch items are ``Keyed`` leaves: a learned path fixes the key each item took. A line
    whose items carry other keys of the same table (same branch, different key) must not be read by
    it as if it had the learned keys: each item's key is swapped for every other key of its table,
    and the fast path must agree with pyparsing each time."""
    from logscope.parsers.grammar import Keyed

    d = dialect("sglang")
    lines = [m for m in (_message(t) for t in REAL) if m.startswith(("Decode batch", "Prefill batch"))]
    assert lines
    _teach("sglang", lines)
    narrowed = [rx.pattern for g in d.grammars for rx, _read in _paths_of(g)]
    assert any(r"\#running\-req:\ (?P<" in p for p in narrowed), narrowed[:1]
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


def test_paths_read_every_fixture_line_like_the_grammar_regex() -> None:
    """Read file by file, as a log is, the learned paths read each fixture message they fit exactly
    as the grammar's own regex does (the generic group loop), and they fit most periodic lines."""
    from logscope.parsers.grammar import match_loop

    read = 0
    periodic = 0
    for p in LOGS:
        for ln in read_lines(str(p)):
            text = _message(ln.text)
            for g in GRAMMARS:
                traces = g._traces  # type: ignore[attr-defined]
                if traces is None or not any(a in text for a in g.anchors):
                    continue
                got = traces.read(text)
                if got is not None:
                    assert _same(got, match_loop(g, text)), (g.name, text)
                elif g.match(text) is None:  # the grammar's regex; teaches the path
                    continue
                if g.name in ("sglang.decode_batch", "vllm.stats"):
                    periodic += 1
                    read += got is not None
    assert periodic > 500 and read > 0.8 * periodic, (read, periodic)


def test_a_search_path_starts_where_the_grammar_would() -> None:
    """A grammar that may start anywhere takes the first place where it matches. A path is tried
    only at the first occurrence of the grammar's leading literal: a line that holds the literal
    earlier (where the grammar fails) must still be read as the grammar reads it."""
    from logscope.parsers.sglang.grammars import DECODE

    line = next(m for m in (_message(t) for t in REAL) if m.startswith("Decode batch, #running-req"))
    DECODE.match(line)
    assert _paths_of(DECODE)
    # the last one: the grammar matches at the first "Decode batch" (an unknown item "foo" whose value
    # runs to the next comma), the path only at the second
    for text in (
        f"Decode batch? then {line}",
        f"{line} Decode batch, x",
        f"x {line}",
        f"Decode batch {line}",
        f"Decode batch, foo: 1 {line}",
    ):
        assert _same(DECODE.match(text), DECODE.match_pp(text)), text
