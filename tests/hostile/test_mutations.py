"""Real log lines, mutated (hypothesis): the parser never raises, and every number it reports is
in the line it came from (or is that number in the field's unit: a fraction as a percent, MiB as GiB,
seconds as milliseconds; or the sum of two of them, as SGLang's K and V sizes make the pool's GiB).

The lines are the fixture copies of the shared corpus (vLLM 0.32.0, SGLang 0.5.23): the lines of
them that give a typed event. Mutations: a number replaced by another (negative, huge, with a
fraction), a character dropped, inserted or replaced, a stretch repeated or cut."""

from __future__ import annotations

import math
import re
from functools import cache

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logscope.parsers import dialect
from logscope.parsers.framing import Line
from logscope.parsers.pipeline import Parser
from tests.conftest import FIXTURES

SOURCES = {
    "vllm": FIXTURES / "vllm/corpus/gen-a2_decode_steady_c10.log",
    "sglang": FIXTURES / "sglang/corpus/gen-a1_plain_c10.log",
}
# fields that are not read off the line: where and when it is, how often repeated, a rank or an
# engine count the header or the parser supplies
CONTEXT = {"line", "end_line", "t_s", "tp_rank", "dp_rank", "repeated", "engine_index", "engines_aggregated"}
NUMBER = re.compile(r"[-+]?(?:\d+(?:[.,_]\d+)*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
FACTORS = (1.0, 100.0, 0.01, 1024.0, 1 / 1024, 1000.0, 0.001, 1 << 20, 1 / (1 << 20), 1 << 30, 1 / (1 << 30))


@cache
def real_lines(engine: str) -> tuple[str, ...]:
    """One line per event kind and shape (its text with digits masked), from the fixture log."""
    parser = Parser(dialect(engine), keep_unparsed=False)
    text = SOURCES[engine].read_text(encoding="utf-8").splitlines()
    seen: dict[str, str] = {}
    for i, t in enumerate(text, 1):
        for e in Parser(dialect(engine), keep_unparsed=False).events([Line("f", i, t)]):
            if e.kind not in ("unparsed", "warning", "error"):
                seen.setdefault(re.sub(r"\d+", "0", t)[:120], t)
    del parser
    assert len(seen) >= 5, seen
    return tuple(seen.values())


def _numbers(text: str) -> list[float]:
    out = []
    for m in NUMBER.finditer(text):
        s = m.group().replace(",", "").replace("_", "")
        try:
            out.append(float(s))
        except ValueError:
            continue
    return out


def _in_line(value: float, numbers: list[float]) -> bool:
    if not math.isfinite(value):
        return True  # inf / nan are printed as words; nothing to find
    for n in numbers:
        for f in FACTORS:
            if math.isclose(value, n * f, rel_tol=1e-3, abs_tol=0.006):
                return True
    return False


@st.composite
def mutated(draw: st.DrawFn, engine: str) -> str:
    line = draw(st.sampled_from(real_lines(engine)))
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["number", "drop", "insert", "repeat", "cut"]))
        spans = [m.span() for m in re.finditer(r"\d+(?:\.\d+)?", line)]
        if op == "number" and spans:
            a, b = draw(st.sampled_from(spans))
            new = draw(
                st.one_of(
                    st.integers(-(10**12), 10**15).map(str),
                    st.floats(-1e9, 1e12, allow_nan=False).map(lambda x: f"{x:.3f}"),
                )
            )
            line = line[:a] + new + line[b:]
        elif op == "drop" and line:
            i = draw(st.integers(0, len(line) - 1))
            line = line[:i] + line[i + 1 :]
        elif op == "insert":
            i = draw(st.integers(0, len(line)))
            line = line[:i] + draw(st.sampled_from(list(" :,.%-=|()[]{}'\"0123456789xé\t"))) + line[i:]
        elif op == "repeat" and line:
            i = draw(st.integers(0, len(line) - 1))
            j = draw(st.integers(i, min(len(line), i + 40)))
            line = line[:j] + line[i:j] + line[j:]
        elif op == "cut":
            line = line[: draw(st.integers(0, len(line)))]
    return line


def _check(engine: str, text: str) -> None:
    parser = Parser(dialect(engine), keep_unparsed=True)
    events = list(parser.events([Line("f", 1, text)]))  # no exception
    assert len(events) >= 1  # every record becomes an event (unparsed at worst)
    numbers = _numbers(text)
    numbers += [a + b for i, a in enumerate(numbers) for b in numbers[i + 1 :]]  # a stated total (K + V size)
    for e in events:
        for name, value in e.__dict__.items():
            if name in CONTEXT or isinstance(value, bool) or not isinstance(value, int | float):
                continue
            assert _in_line(float(value), numbers), (e.kind, name, value, text)


SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(mutated("vllm"))
def test_mutated_vllm_lines(text: str) -> None:
    _check("vllm", text)


@SETTINGS
@given(mutated("sglang"))
def test_mutated_sglang_lines(text: str) -> None:
    _check("sglang", text)


def test_unmutated_lines_hold_their_numbers() -> None:
    for engine in SOURCES:
        for text in real_lines(engine):
            _check(engine, text)
