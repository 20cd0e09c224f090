"""``make_event`` must give what the validated constructor gives: the same object in every respect
(field values and their Python types, field order, fields-set, JSON), or the same exception.

Checked on every event of every fixture (rebuilt from its dump, from its dump with integral floats
given as ints, and from what the parser really hands the constructor), and on odd values hypothesis
makes up (ints for floats, bools for ints, None, strings of digits, tuples, int subclasses, ...).
"""

from __future__ import annotations

import enum
import math
import pickle
import sys
import types
import typing
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from logscope.api import iter_events
from logscope.events import EVENT_TYPES, KINDS, DecodeBatch, Event, make_event, restore_event
from logscope.parsers import pipeline
from tests.conftest import FIXTURES

FILES = sorted(p for p in FIXTURES.rglob("*") if p.is_file())
BASE_NAMES = [n for n in Event.model_fields if n != "kind"]


def _split(values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A dump as the parser passes it: the header's fields (``base``) and the grammar's (``fields``)."""
    base = {k: v for k, v in values.items() if k in BASE_NAMES}
    fields = {k: v for k, v in values.items() if k not in BASE_NAMES and k != "kind"}
    return base, fields


def _same_value(a: Any, b: Any) -> bool:
    """Equal with the same Python type, item by item (nan equals nan here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same_value(a[k], b[k]) for k in a)
    return bool(a == b)


def assert_same_event(fast: Event, ref: Event, *, fields_set: bool = True) -> None:
    assert type(fast) is type(ref)
    assert list(fast.__dict__) == list(ref.__dict__)  # the model's field order (repr, iteration)
    for name in ref.__dict__:
        assert _same_value(getattr(fast, name), getattr(ref, name)), (
            name,
            getattr(fast, name),
            getattr(ref, name),
        )
    if fields_set:
        assert fast.__pydantic_fields_set__ == ref.__pydantic_fields_set__
    assert fast.__pydantic_extra__ == ref.__pydantic_extra__
    assert fast.__pydantic_private__ == ref.__pydantic_private__
    assert fast.model_dump_json() == ref.model_dump_json()
    assert repr(fast) == repr(ref)
    if not any(isinstance(v, float) and math.isnan(v) for v in ref.__dict__.values()):
        assert fast == ref


def _outcome(fn: Any) -> Event | type[BaseException]:
    try:
        return typing.cast(Event, fn())
    except (ValidationError, TypeError, ValueError, KeyError) as exc:
        return type(exc)


def assert_same_outcome(kind: str, base: dict[str, Any], fields: dict[str, Any]) -> None:
    ref = _outcome(lambda: EVENT_TYPES[kind](**base, **fields))
    fast = _outcome(lambda: make_event(kind, base, fields))
    if isinstance(ref, type):
        assert fast is ref, (kind, base, fields, fast)
    else:
        assert isinstance(fast, Event), (kind, base, fields, fast)
        assert_same_event(fast, ref)


@cache
def fixture_events(path: Path) -> list[Event]:
    return list(iter_events(str(path)))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_event_rebuilds_equal(path: Path) -> None:
    for e in fixture_events(path):
        base, fields = _split(e.model_dump())
        made = make_event(e.kind, base, fields)
        assert_same_event(made, e, fields_set=False)  # a dump gives every field; the parser gave fewer
        assert_same_event(made, EVENT_TYPES[e.kind](**base, **fields))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_restored_events_equal_made_ones(path: Path) -> None:
    """``restore_event`` (an event sent back from a worker process as its ``__dict__``'s values, pickled)
    gives what ``make_event`` gives from the same values, fields-set included."""
    for e in fixture_events(path):
        names = tuple(type(e).model_fields)
        values = dict(zip(names, pickle.loads(pickle.dumps(tuple(e.__dict__.values()))), strict=True))
        assert_same_event(restore_event(e.kind, dict(values)), make_event(e.kind, {}, dict(values)))


def _ints_for_floats(value: Any) -> Any:
    """Integral floats as ints (what a grammar hands over for ``"12"`` in a float field)."""
    if (
        type(value) is float
        and math.isfinite(value)
        and value == int(value)
        and not (value == 0 and math.copysign(1, value) < 0)
    ):
        return int(value)
    if type(value) is list:
        return [_ints_for_floats(x) for x in value]
    return value


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_event_with_ints_for_floats(path: Path) -> None:
    for e in fixture_events(path):
        base, fields = _split({k: _ints_for_floats(v) for k, v in e.model_dump().items()})
        assert_same_outcome(e.kind, base, fields)


def test_what_the_parser_hands_over(monkeypatch: pytest.MonkeyPatch) -> None:
    """The (base, fields) the parser really gives (ints where the grammar read no decimal point)."""
    seen: list[tuple[str, dict[str, Any], dict[str, Any]]] = []

    def recording_make_event(kind: str, base: dict[str, Any], fields: dict[str, Any]) -> Event:
        seen.append((kind, dict(base), dict(fields)))
        return make_event(kind, base, fields)

    monkeypatch.setattr(pipeline, "make_event", recording_make_event)
    for path in FILES:
        if path.suffix in (".log", ".txt"):
            list(iter_events(str(path)))
    assert len(seen) > 1000
    for kind, base, fields in seen:
        assert_same_outcome(kind, base, fields)


# -- odd values ---------------------------------------------------------------------------------------


class Small(enum.IntEnum):
    ONE = 1


class Fraction(float):
    pass


ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, -1, 2**53, 2**53 + 1, -(2**53) - 1, 2**1100]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e308, float("nan"), float("inf")]),
    st.text(max_size=8),
    st.sampled_from(["12", "1.5", "true", "vllm", "sglang", "decode_batch", "", " 3 "]),
    st.sampled_from([Small.ONE, Fraction(1.5), b"12", (1.0, 2.0), [1, 2.5], [True], [1, "x"], [], {}]),
    st.lists(st.one_of(st.integers(-5, 5), st.floats(), st.booleans(), st.none()), max_size=3),
    st.dictionaries(st.one_of(st.text(max_size=3), st.integers(0, 3)), st.integers(0, 3), max_size=2),
)


def _of_type(ann: Any) -> st.SearchStrategy[Any]:
    """Values a parser could plausibly give for a field of this annotation (ints for floats too)."""
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin in (typing.Union, types.UnionType):
        return st.one_of([st.none() if a is type(None) else _of_type(a) for a in args])
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin is list:
        return st.lists(_of_type(args[0]), max_size=3)
    if origin is dict or ann is dict:
        return st.dictionaries(
            st.text(max_size=3), st.one_of(st.integers(), st.text(max_size=3), st.none()), max_size=2
        )
    if ann is float:
        return st.one_of(
            st.floats(), st.integers(-(10**6), 10**6), st.sampled_from([2**53, -(2**53), 2**53 + 1, 0, -0.0])
        )
    if ann is int:
        return st.integers(-(2**40), 2**40)
    if ann is bool:
        return st.booleans()
    return st.text(max_size=5)


@st.composite
def inputs(draw: st.DrawFn) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(kind, base, fields): plausible values, a few fields left out, up to two odd values."""
    kind = draw(st.sampled_from(KINDS))
    model = EVENT_TYPES[kind]
    values: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if draw(st.integers(0, 29 if info.is_required() else 3)) == 1 or (
            name == "kind" and draw(st.booleans())
        ):
            continue  # (hypothesis favours 0: 1 keeps omissions rare)
        values[name] = draw(_of_type(info.annotation))
    for name in draw(st.lists(st.sampled_from(list(model.model_fields)), max_size=2)):
        values[name] = draw(ODD)
    base, fields = _split(values)
    if "kind" in values:
        fields["kind"] = values["kind"]
    if draw(st.integers(0, 19)) == 1:
        fields["not_a_field"] = 1
    if draw(st.integers(0, 19)) == 1 and base:
        fields[next(iter(base))] = (
            None  # a name in both: TypeError, as for EVENT_TYPES[kind](**base, **fields)
        )
    return kind, base, fields


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inputs())
def test_odd_values_same_as_validated(case: tuple[str, dict[str, Any], dict[str, Any]]) -> None:
    kind, base, fields = case
    assert_same_outcome(kind, base, fields)


def test_plain_values_take_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every kind has a plan, and the usual parser output is built without validation."""
    from logscope.events import construct

    assert all(construct._plan(kind) is not None for kind in KINDS)
    unparsed = {"text": "x", "candidate": None}
    want = [make_event("decode_batch", BASE, FIELDS), make_event("unparsed", BASE, unparsed)]  # plans made
    monkeypatch.setattr(construct, "EVENT_TYPES", {})  # validation would now fail with KeyError
    assert [make_event("decode_batch", BASE, FIELDS), make_event("unparsed", BASE, unparsed)] == want


def test_unknown_kind_raises_like_the_mapping() -> None:
    with pytest.raises(KeyError):
        make_event("no_such_kind", {}, {})


# -- memory: shared fields-sets, key-sharing dicts -------------------------------------------------

BASE = dict(
    engine="sglang",
    file="x.log",
    line=7,
    end_line=None,
    time="2026-10-18 18:01:46",
    t_s=1.0,
    process="TP0",
    tp_rank=0,
    dp_rank=None,
    level=None,
    repeated=1,
    raw="Decode batch, ...",
)
FIELDS = dict(running=1, tokens=3588, token_usage=0.9, gen_tok_s=490, queue=16, cuda_graph=True)


def test_fields_set_is_shared_and_copies_stay_independent() -> None:
    a = make_event("decode_batch", BASE, FIELDS)
    b = DecodeBatch(**BASE, **FIELDS)
    c = DecodeBatch.model_validate({**BASE, **FIELDS})
    assert a.__pydantic_fields_set__ is b.__pydantic_fields_set__ is c.__pydantic_fields_set__
    before = set(a.__pydantic_fields_set__)
    d = DecodeBatch(**BASE, running=2, gen_tok_s=1.0)
    moved = d.model_copy(update={"tokens": 5})
    assert moved.model_fields_set == d.model_fields_set | {"tokens"}
    assert "tokens" not in d.model_fields_set
    assert a.__pydantic_fields_set__ == before
    with pytest.raises(ValidationError):
        a.running = 3  # type: ignore[misc]  # frozen: the shared set is never changed in place
    assert pickle.loads(pickle.dumps(a)) == a
    assert pickle.loads(pickle.dumps(a)).__pydantic_fields_set__ is a.__pydantic_fields_set__


def test_events_are_small() -> None:
    """No 2 KB fields-set per event, a compact ``__dict__`` (where the interpreter shares keys)."""
    for e in (make_event("decode_batch", BASE, FIELDS), DecodeBatch(**BASE, **FIELDS)):
        assert sys.getsizeof(e.__dict__) < 500  # an ordinary dict of 22 fields: 830 B
        assert e.extra == {} and e.extra is not make_event("decode_batch", BASE, FIELDS).extra


def test_repeated_text_is_shared() -> None:
    a = make_event("decode_batch", BASE, FIELDS)
    b = make_event(
        "decode_batch", {**BASE, "time": "".join(BASE["time"]), "process": "".join(["TP", "0"])}, FIELDS
    )
    assert a.time is b.time and a.process is b.process
    assert a == b
