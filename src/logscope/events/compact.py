"""Keep a parsed event small in memory: shared ``__pydantic_fields_set__`` sets, key-sharing dicts.

An event-dense log (SGLang prints a batch line per step) yields a million events; per event, pydantic
keeps a set of the field names given (a 22-name set takes 2.2 KB, more than everything else in the
event) and a ``__dict__`` of every field (830 B for 22 fields as an ordinary dict). Both can shrink
without any visible change:

* The fields-set of a frozen model is never changed in place: assignment is refused, and
  ``model_copy`` copies the set before adding the updated names. So every event given the same
  field names can hold one shared set (``shared_fields_set``).
* CPython shares the key table between the attribute dicts of one class ("split" or key-sharing
  dicts, PEP 412): such a dict holds only its values (about 250 B for 22 fields). A copy of a split
  dict is split too, so each model class gets one template dict (``template_dict``) whose copies
  become the events' ``__dict__``. Where the interpreter cannot share keys, the copy is an ordinary
  dict: correct, merely bigger.

This module imports no model (``models`` uses it from ``Event.model_post_init``).
"""

from __future__ import annotations

from typing import Any

# distinct name sets are few (one per grammar and header shape); the caps only guard against a caller
# that makes up field-name sets without end
_MAX_SETS = 4096
_SETS: dict[frozenset[str], set[str]] = {}
_SETS_BY_KEYS: dict[tuple[str, ...], set[str]] = {}
# class -> (its fields in order, its template_dict, whether it is frozen)
_TEMPLATES: dict[type, tuple[tuple[str, ...], dict[str, Any], bool]] = {}


def shared_fields_set(names: set[str]) -> set[str]:
    """The one shared set equal to ``names`` (``names`` itself the first time it is seen).

    Only for frozen models: the shared set must never be changed in place (see the module doc)."""
    key = frozenset(names)
    got = _SETS.get(key)
    if got is not None:
        return got
    if len(_SETS) < _MAX_SETS:
        _SETS[key] = names
    return names


def fields_set_of_keys(keys: tuple[str, ...]) -> set[str]:
    """The shared fields-set of these names, looked up by the tuple of names as given (cheaper to hash
    than a frozenset is to build: this is the fast constructor's per-event lookup)."""
    got = _SETS_BY_KEYS.get(keys)
    if got is None:
        got = shared_fields_set(set(keys))
        if len(_SETS_BY_KEYS) < _MAX_SETS:
            _SETS_BY_KEYS[keys] = got
    return got


def template_dict(cls: type, fields: dict[str, Any]) -> dict[str, Any]:
    """A key-sharing dict of ``cls``'s instances holding ``fields`` in order: copy it, then assign
    the copy's values (assigning keys it has keeps a copy key-sharing; adding others does not).

    Made by setting the attributes one by one on a bare instance: that is what gives an instance dict
    the class's shared keys. ``fields`` should list every model field, in the model's order."""
    obj = cls.__new__(cls)  # type: ignore[call-overload]
    for name, value in fields.items():
        object.__setattr__(obj, name, value)
    tmpl: dict[str, Any] = obj.__dict__
    return tmpl


def compact(obj: Any) -> None:
    """Make a just-built model instance small: its fields-set shared (frozen models only), its
    ``__dict__`` key-sharing.

    A no-op for what it does not recognise (a dict whose keys are not exactly the model's fields in
    the model's order), so it can run after every construction path (validation, ``model_construct``,
    unpickling)."""
    cls = type(obj)
    known = _TEMPLATES.get(cls)
    if known is None:
        tmpl = template_dict(cls, dict.fromkeys(cls.model_fields))
        known = _TEMPLATES[cls] = (tuple(tmpl), tmpl, bool(cls.model_config.get("frozen")))
    order, tmpl, frozen = known
    fields_set = obj.__pydantic_fields_set__
    if frozen and type(fields_set) is set:
        object.__setattr__(obj, "__pydantic_fields_set__", shared_fields_set(fields_set))
    values = obj.__dict__
    if type(values) is dict and tuple(values) == order:
        out = tmpl.copy()
        out.update(values)
        object.__setattr__(obj, "__dict__", out)


__all__ = ["compact", "fields_set_of_keys", "shared_fields_set", "template_dict"]
