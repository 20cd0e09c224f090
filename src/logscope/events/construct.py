"""``make_event``: build an event as the validated constructor would, at a fraction of its cost.

A parser hands over plain values that almost always already have the field's type (an int for an
``int`` field, a float or an int for a ``float`` one, ``None`` for an optional one). Full pydantic
validation of such values, plus making the event small afterwards (``Event.model_post_init``), costs
~70k CPU instructions for a ``decode_batch``; this path ~33k (callgrind; ~41k while each event's
values were first merged into a dict and its steps looped over), and its events share their
repeated time and process strings. On an event-dense log (SGLang: a batch line per scheduler step,
a million a run) that is a good part of the parse. Here each model's annotations become a
small table, per field: which Python types are taken as they are, which are converted (an int for a
``float`` field becomes a float, as pydantic does), which literals are allowed. A value the table
does not know for sure (a bool for an ``int`` field, a string of digits, a tuple for a list, a
subclass of ``int``, a missing required field, an unknown field) sends the whole event through the
validated constructor: the result, or the ``ValidationError`` / ``TypeError``, is then pydantic's own.

The instance is assembled the way pydantic's own ``model_copy`` does it (``__new__`` and the
instance's slots): ``__dict__`` holds every field in the model's order, defaults filled in (a
key-sharing copy of a per-class template, see ``compact``), ``__pydantic_fields_set__`` the shared
set of the names given, no extra and no private values. ``tests/events/test_construct.py`` checks
that every event of every fixture comes out equal, field types and JSON included.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import dataclass
from types import NoneType, UnionType
from typing import Any, TypeVar

from pydantic import BaseModel

from logscope.events.compact import compact, fields_set_of_keys, shared_fields_set, template_dict
from logscope.events.models import EVENT_TYPES, Event

EventT = TypeVar("EventT", bound=Event)

# what to do with a value, by the field and the value's exact type (see _Plan.accept)
_KEEP = 0  # taken as it is
_TO_FLOAT = 1  # an int for a float field: float(v), as pydantic does (exact below 2**53)
_LITERAL = 2  # one of the Literal's values
_LIST = 3  # a list whose items are each kept or converted (a new list, as pydantic makes one)
_DICT = 4  # dict[str, Any]: a new dict, keys must be str
_SHARE = 5  # kept, but one object per distinct value (times and process tags repeat line after line)

_FLOAT_EXACT = 2**53  # ints up to this convert to float exactly (and the same way in pydantic-core)

# text fields whose values repeat from event to event: equal values share one string (a 1M-event
# log otherwise holds 1M copies of a few thousand time stamps and a few rank tags)
_SHARED_FIELDS = ("time", "process", "level")
_SHARE_CAP = 8192  # distinct values kept per field before its cache starts over
_MAX_SHAPES = 512  # shapes remembered per kind (a parser gives a handful)

# a shape: the names given, in order (base's, then fields'), then the exact type of each value
_ShapeKey = tuple[Any, ...]
# builds the event from (base, fields) of its shape, or gives None: a value that must be validated
_Builder = Callable[[dict[str, Any], dict[str, Any]], Event | None]


@dataclass(frozen=True, slots=True)
class _Plan:
    """How to build one kind without validation."""

    cls: type[Event]
    accept: dict[str, dict[type, int]]  # field -> {exact type of the value: action}
    tables: dict[str, Any]  # field -> what its action needs (allowed literals, item types, share cache)
    required: frozenset[str]
    factories: tuple[tuple[str, Callable[[], Any]], ...]  # fields whose default is made per instance
    template: dict[str, Any]  # every field, defaults filled in, a key-sharing dict (copied per event)
    shapes: dict[_ShapeKey, _Builder | None]  # None: that shape is always validated

    def shape(self, key: _ShapeKey) -> _Builder | None:
        """The builder of ``key``'s shape (None: some name or type is not known for sure, or a name
        is given twice), remembered."""
        n = len(key) // 2
        names, types = key[:n], key[n:]
        build: _Builder | None = None
        steps = []
        for name, t in zip(names, types, strict=True):
            action = self.accept.get(name, {}).get(t)
            if action is None:  # not a field (extra="forbid"), or a type pydantic may treat otherwise
                break
            if action != _KEEP:
                steps.append((name, action))
        else:
            if self.required <= set(names) and len(set(names)) == n:
                build = self._builder(names, steps)
        if len(self.shapes) < _MAX_SHAPES:
            self.shapes[key] = build
        return build

    def _builder(self, names: tuple[str, ...], steps: list[tuple[str, int]]) -> _Builder:
        """The shape's steps written out as one function (no loop over steps, no dispatch on the
        action per value): the fields given over a copy of the template, each value that needs it
        converted or shared in place, then the instance. A value that is not sure to come out as
        pydantic's makes it return None (``make_event`` validates then)."""
        env: dict[str, Any] = {
            "template": self.template,
            "new": self.cls.__new__,
            "cls": self.cls,
            "fields_set": fields_set_of_keys(names),
            "set_dict": _SET_DICT,
            "set_fields_set": _SET_FIELDS_SET,
            "set_extra": _SET_EXTRA,
            "set_private": _SET_PRIVATE,
            "share": _share,
            "to_list": _list,
            "UNSURE": _UNSURE,
            "str": str,
            "dict": dict,
            "float": float,
            "type": type,
            "LOW": -_FLOAT_EXACT,
            "HIGH": _FLOAT_EXACT,
        }
        body = [
            "def build(base, fields):",
            "    d = template.copy()",
            "    d.update(base)",
            "    d.update(fields)",
        ]
        for i, (name, action) in enumerate(steps):
            t = f"t{i}"
            env[t] = self.tables.get(name)
            body.append(f"    v = d[{name!r}]")
            if action == _SHARE:
                body += [f"    w = {t}.get(v)", f"    d[{name!r}] = w if w is not None else share({t}, v)"]
                continue
            if action == _TO_FLOAT:
                body += ["    if not LOW <= v <= HIGH:", "        return None", f"    d[{name!r}] = float(v)"]
            elif action == _LITERAL:
                body += [
                    f"    w = {t}.get(v, UNSURE)",
                    "    if w is UNSURE:",
                    "        return None",
                    f"    d[{name!r}] = w",
                ]
            elif action == _LIST:
                body += [
                    f"    w = to_list(v, {t})",
                    "    if w is UNSURE:",
                    "        return None",
                    f"    d[{name!r}] = w",
                ]
            else:  # _DICT: a new dict, its keys strings (an empty one, as SGLang's batch lines give: no test)
                body += [
                    "    if v:",
                    "        for k in v:",
                    "            if type(k) is not str:",
                    "                return None",
                    f"    d[{name!r}] = dict(v)",
                ]
        for i, (name, factory) in enumerate(self.factories):
            if name not in names:
                env[f"f{i}"] = factory
                body.append(f"    d[{name!r}] = f{i}()")
        body += [
            "    obj = new(cls)",
            "    set_dict(obj, d)",
            "    set_fields_set(obj, fields_set)",
            "    set_extra(obj, None)",
            "    set_private(obj, None)",
            "    return obj",
        ]
        exec("\n".join(body), env)  # noqa: S102 - our own code, built from the model's annotations
        build: _Builder = env["build"]
        return build


_UNSURE = object()  # a value that is not sure to come out as pydantic's: validate instead
_PLANS: dict[str, _Plan | None] = {}
_SET_DICT = BaseModel.__dict__["__dict__"].__set__  # the slots' own setters: what object.__setattr__
_SET_FIELDS_SET = BaseModel.__dict__["__pydantic_fields_set__"].__set__  # reaches, minus its lookups
_SET_EXTRA = BaseModel.__dict__["__pydantic_extra__"].__set__
_SET_PRIVATE = BaseModel.__dict__["__pydantic_private__"].__set__


def make_event(kind: str, base: dict[str, Any], fields: dict[str, Any]) -> Event:
    """The event ``EVENT_TYPES[kind](**base, **fields)``, equal in every field and field type.

    Raises what that call raises (``KeyError`` for an unknown kind, ``TypeError`` when ``base`` and
    ``fields`` share a name, ``ValidationError`` for a bad value): every case not known to be simple
    is handed to it.

    The names given and the exact type of each value (the input's "shape") decide everything but a
    few value checks; a parser gives a handful of shapes per kind, so each is worked out once into a
    function written out for it (``_Plan.shape``) and looked up after that by one flat tuple of the
    names and the types (built in C, and hashed and compared as one tuple: the values are never
    merged into a dict of their own, the event's copy of the template takes them directly)."""
    try:
        plan = _PLANS[kind]
    except KeyError:
        plan = _PLANS[kind] = _plan(kind)
    if plan is not None:
        key = (*base, *fields, *map(type, base.values()), *map(type, fields.values()))
        try:
            build = plan.shapes[key]
        except KeyError:
            build = plan.shape(key)
        if build is not None:
            obj = build(base, fields)
            if obj is not None:
                return obj
    return EVENT_TYPES[kind](**base, **fields)


def restore_event(kind: str, values: dict[str, Any]) -> Event:
    """``make_event(kind, {}, values)`` for the values of every field of an event built in another
    process (its ``__dict__``, pickled: ``logscope.parsers.chunks``).

    They were typed there, and pickling keeps types, so none of ``make_event``'s per-value steps
    changes one (an int in a float field was converted already, a literal is allowed, lists and dicts
    arrive as new objects); what is left is the key-sharing ``__dict__``, the shared strings and the
    shared set of names. A test checks both give equal events on every fixture event."""
    try:
        plan = _PLANS[kind]
    except KeyError:
        plan = _PLANS[kind] = _plan(kind)
    if plan is None or len(values) != len(plan.template):
        return make_event(kind, {}, values)
    d = plan.template.copy()
    d.update(values)
    for name in _SHARED_FIELDS:
        v = d[name]
        table = plan.tables.get(name)
        if table is not None and type(v) is str:
            d[name] = _share(table, v)
    obj = plan.cls.__new__(plan.cls)
    _SET_DICT(obj, d)
    _SET_FIELDS_SET(obj, fields_set_of_keys(tuple(values)))
    _SET_EXTRA(obj, None)
    _SET_PRIVATE(obj, None)
    return obj


def _share(table: dict[str, str], v: str) -> str:
    """The one string object kept for ``v``'s value in a field's table (at most ``_SHARE_CAP`` kept,
    then the table starts over)."""
    got = table.get(v)
    if got is None:
        if len(table) >= _SHARE_CAP:
            table.clear()
        table[v] = got = v
    return got


def copy_event(event: EventT, update: dict[str, Any]) -> EventT:
    """``event.model_copy(update=update)`` (no validation, as there), kept as small as a parsed event.

    ``model_copy`` gives the copy a set of its own for ``__pydantic_fields_set__`` (2 KB for a batch
    line); here the copy shares the event's (or the shared set of the names plus ``update``'s), and
    its ``__dict__`` stays key-sharing. Same steps as ``model_copy`` otherwise: a copy of
    ``__dict__`` updated with ``update``."""
    if (
        event.__pydantic_extra__ is not None
        or event.__pydantic_private__ is not None
        or not event.model_config.get("frozen")
    ):  # a set shared with a mutable model could change
        out = event.model_copy(update=update)
        compact(out)
        return out
    fields_set = event.__pydantic_fields_set__
    if not fields_set.issuperset(update):
        fields_set = shared_fields_set(fields_set | update.keys())
    d = event.__dict__.copy()
    d.update(update)
    cls = type(event)
    obj = cls.__new__(cls)
    _SET_DICT(obj, d)
    _SET_FIELDS_SET(obj, fields_set)
    _SET_EXTRA(obj, None)
    _SET_PRIVATE(obj, None)
    return obj


def _list(v: list[Any], items: dict[type, int]) -> list[Any] | object:
    """A new list of ``v``'s items as pydantic stores them, or ``_UNSURE``."""
    out = []
    for x in v:
        a = items.get(type(x))
        if a is None:
            return _UNSURE
        if a == _TO_FLOAT:
            if not -_FLOAT_EXACT <= x <= _FLOAT_EXACT:
                return _UNSURE
            x = float(x)
        out.append(x)
    return out


# -- plans: from the model's annotations ------------------------------------------------------------

_SCALARS: dict[Any, dict[type, int]] = {
    int: {int: _KEEP},
    float: {float: _KEEP, int: _TO_FLOAT},
    bool: {bool: _KEEP},
    str: {str: _KEEP},
}


# model settings that leave validation as the tables assume it (anything else: always validated)
_PLAIN_CONFIG = {"frozen", "extra", "title"}


def _plan(kind: str) -> _Plan | None:
    """The tables for ``kind``; None when the model is not one they describe (an unknown kind, a
    validator, an alias, a constraint, a setting that changes validation): always validated then."""
    cls = EVENT_TYPES.get(kind)
    if cls is None or not _plain(cls):
        return None
    accept: dict[str, dict[type, int]] = {}
    tables: dict[str, Any] = {}
    required: set[str] = set()
    factories: list[tuple[str, Callable[[], Any]]] = []
    defaults: dict[str, Any] = {}
    for name, info in cls.model_fields.items():
        if info.alias is not None or info.metadata:
            return None
        table: dict[type, int] = {}
        ann = info.annotation
        args = typing.get_args(ann)
        if typing.get_origin(ann) in (typing.Union, UnionType) and NoneType in args:
            table[NoneType] = _KEEP
            rest = [a for a in args if a is not NoneType]
            ann = rest[0] if len(rest) == 1 else None  # a union of several types: always validated
        origin, args = typing.get_origin(ann), typing.get_args(ann)
        if ann in _SCALARS:
            table.update(_SCALARS[ann])
            if name in _SHARED_FIELDS and ann is str:
                table[str] = _SHARE
                tables[name] = {}  # the field's shared strings
        elif origin is typing.Literal and len({type(a) for a in args}) == 1:  # (1 == True: one type only)
            table[type(args[0])] = _LITERAL
            tables[name] = {a: a for a in args}
        elif origin is list and len(args) == 1 and args[0] in _SCALARS:
            table[list] = _LIST
            tables[name] = _SCALARS[args[0]]
        elif (origin is dict and args == (str, Any)) or ann is dict:
            table[dict] = _DICT
            tables[name] = None
        accept[name] = table  # only None, or an empty table: any value is validated
        if info.is_required():
            required.add(name)
            defaults[name] = None  # placeholder: a required field is always given
        elif info.default_factory is not None:
            if getattr(info, "default_factory_takes_validated_data", False):  # pydantic >= 2.10
                return None  # a factory of the other fields' values
            factories.append((name, info.default_factory))  # type: ignore[arg-type]
            defaults[name] = None
        elif _immutable(info.default):
            defaults[name] = info.default
        else:  # pydantic copies a mutable default per instance
            return None
    return _Plan(
        cls=cls,
        accept=accept,
        tables=tables,
        required=frozenset(required),
        factories=tuple(factories),
        template=template_dict(cls, defaults),
        shapes={},
    )


def _plain(cls: type[Event]) -> bool:
    """No validator, no setting that changes validation, our own post-init (``compact``)."""
    decorators = cls.__pydantic_decorators__
    return (
        set(cls.model_config) <= _PLAIN_CONFIG
        and not (
            decorators.validators
            or decorators.field_validators
            or decorators.root_validators
            or decorators.model_validators
        )
        and cls.model_post_init is Event.model_post_init
        and not cls.__private_attributes__
    )


def _immutable(value: Any) -> bool:
    return value is None or type(value) in (int, float, bool, str)


__all__ = ["copy_event", "make_event", "restore_event"]
