"""The one registry of the report's analyses (analyses/registry.py) agrees with the Report model: every
section of the report is registered under its key with its result type, and each compute function
exists and says it returns that type."""

from __future__ import annotations

import importlib
import inspect
import typing

from pydantic import BaseModel

from logscope.analyses.registry import ANALYSES, BY_NAME
from logscope.analyses.report import SECTIONS, Report
from logscope.digest.context import ANALYSES as CONTEXT_ANALYSES
from logscope.render.content import OPTIONAL_SECTIONS, SECTION_BUILDERS, SECTION_TITLES


def _models(annotation: typing.Any) -> set[str]:
    """The pydantic model names an annotation holds (``X | None``, ``list[X]``, ``dict[str, X]``)."""
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return {annotation.__name__}
    return {name for arg in typing.get_args(annotation) for name in _models(arg)}


def test_every_section_of_the_report_is_registered_with_its_result_type() -> None:
    fields = Report.model_fields
    sections = {
        name: _models(f.annotation)
        for name, f in fields.items()
        if _models(f.annotation) and name not in ("coverage", "lifetimes", "analyzed_lifetime")
    }
    assert set(sections) == set(BY_NAME)
    for a in ANALYSES:
        assert sections[a.name] == {a.result}, a.name


def test_compute_functions_exist_and_return_the_result_type() -> None:
    for a in ANALYSES:
        if a.compute is None:
            continue
        module, _, attr = a.compute.partition(":")
        fn = getattr(importlib.import_module(module), attr)
        assert a.result in str(inspect.signature(fn).return_annotation), a.name


def test_the_report_the_digest_and_the_renderers_read_the_registry() -> None:
    assert SECTIONS == ("stable_decode", "prefill", "spec_decode", "kv_pool", "cold_start", "disturbances")
    assert list(CONTEXT_ANALYSES) == [a.name for a in ANALYSES]
    assert set(SECTION_TITLES) == set(SECTION_BUILDERS)  # a titled section has a builder
    assert set(OPTIONAL_SECTIONS) <= set(SECTION_TITLES)
