"""The registry: codes and slugs checked at registration, docstrings required, plugins via entry points."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from logscope.digest import Context, Finding, digest
from logscope.digest import registry as reg
from logscope.digest.registry import REGISTRY, Registry, Rule, RuleError, all_rules, get_rule, parse_doc

DOC = """A test rule.

    What
        Something.
    Why
        Because.
    Fix
        Change it.
    References
        - here
    """


def _rule(code: str = "ZZ01", slug: str = "zz-test", doc: str | None = DOC, **attrs: Any) -> type[Rule]:
    def check(self: Rule, ctx: Context) -> Iterable[Finding]:
        return []

    ns: dict[str, Any] = {
        "code": code,
        "slug": slug,
        "title": "Test",
        "check": check,
        "__doc__": doc,
        **attrs,
    }
    return type(f"Rule_{code}_{slug.replace('-', '_')}", (Rule,), ns)


@pytest.fixture
def fresh() -> Iterator[Registry]:
    r = Registry()
    r._loaded = True  # no built-ins
    yield r


def test_builtin_rules_are_registered_with_unique_codes_and_slugs() -> None:
    rules = all_rules()
    assert len(rules) >= 19
    assert len({r.code for r in rules}) == len(rules)
    assert len({r.slug for r in rules}) == len(rules)
    assert [r.code for r in rules] == sorted(r.code for r in rules)
    assert get_rule("kv01") is get_rule("kv-cache-overcommitted")
    with pytest.raises(KeyError):
        get_rule("XX99")


@pytest.mark.parametrize("code", ["KV1", "kv01", "KV001", "K01", "", "KV-1"])
def test_malformed_codes_are_rejected(fresh: Registry, code: str) -> None:
    with pytest.raises(RuleError, match="malformed code"):
        fresh.register(_rule(code=code))


def test_duplicate_code_and_slug_are_rejected(fresh: Registry) -> None:
    fresh.register(_rule("ZZ01", "zz-one"))
    with pytest.raises(RuleError, match="already used"):
        fresh.register(_rule("ZZ01", "zz-other"))
    with pytest.raises(RuleError, match="slug 'zz-one'"):
        fresh.register(_rule("ZZ02", "zz-one"))
    with pytest.raises(RuleError, match="malformed slug"):
        fresh.register(_rule("ZZ03", "Not_Kebab"))


def test_builtin_code_cannot_be_taken_by_another_rule() -> None:
    with pytest.raises(RuleError, match="already used"):
        REGISTRY.register(_rule("KV01", "another-kv"))


def test_retired_codes_are_never_reused(fresh: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(reg.RETIRED, "ZZ09", "removed in 0.2: merged into ZZ01")
    with pytest.raises(RuleError, match="retired"):
        fresh.register(_rule("ZZ09", "zz-nine"))


@pytest.mark.parametrize("missing", ["What", "Why", "Fix", "References"])
def test_rules_need_every_documentation_section(fresh: Registry, missing: str) -> None:
    doc = DOC.replace(f"    {missing}\n", "    Nothing\n")
    with pytest.raises(RuleError, match="lacks documentation"):
        fresh.register(_rule(doc=doc))
    with pytest.raises(RuleError, match="lacks documentation"):
        fresh.register(_rule(doc=None))


def test_bad_attributes_are_rejected(fresh: Registry) -> None:
    with pytest.raises(RuleError, match="severity"):
        fresh.register(_rule(severity="fatal"))
    with pytest.raises(RuleError, match="confidence"):
        fresh.register(_rule(confidence="sure"))
    with pytest.raises(RuleError, match="unknown analyses"):
        fresh.register(_rule(requires=("no_such_analysis",)))
    with pytest.raises(RuleError, match="unknown event kinds"):
        fresh.register(_rule(kinds=("no_such_kind",)))
    no_check = type("NoCheck", (Rule,), {"code": "ZZ05", "slug": "zz-five", "title": "T", "__doc__": DOC})
    with pytest.raises(RuleError, match="check"):
        fresh.register(no_check)


def test_parse_doc_sections() -> None:
    doc = parse_doc(DOC)
    assert doc == {
        "summary": "A test rule.",
        "What": "Something.",
        "Why": "Because.",
        "Fix": "Change it.",
        "References": "- here",
    }


class _EntryPoint:
    def __init__(self, name: str, value: str, obj: Any) -> None:
        self.name, self.value, self.group, self._obj = name, value, reg.ENTRY_POINT_GROUP, obj

    def load(self) -> Any:
        if isinstance(self._obj, Exception):
            raise self._obj
        return self._obj


def test_plugins_come_from_the_entry_point_group(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = _rule("ZZ11", "zz-plugin")
    eps = [
        _EntryPoint("builtin", reg.BUILTIN_MODULE, None),
        _EntryPoint("extra", "extra_pkg:RULES", [plugin]),
    ]
    monkeypatch.setattr(reg, "entry_points", lambda group: eps if group == reg.ENTRY_POINT_GROUP else [])
    r = Registry()  # built-in rules register into the global REGISTRY when first imported; here: plugins only
    r.load()
    assert [c.code for c in r.rules()] == ["ZZ11"]
    assert r.get("zz-plugin") is plugin


def test_a_broken_plugin_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    eps = [_EntryPoint("broken", "broken_pkg", ImportError("No module named 'broken_pkg'"))]
    monkeypatch.setattr(reg, "entry_points", lambda group: eps)
    with pytest.raises(RuleError, match="plugin 'broken'"):
        Registry().load()


def test_missing_inputs_report_nothing_and_say_why() -> None:
    from logscope.analyses.base import RunData
    from logscope.events import Throughput

    data = RunData(
        events=[Throughput(file="f.log", line=1, gen_tok_s=10.0, running=1, waiting=0, t_s=0.0)],
        engine="vllm",
        files=["f.log"],
    )
    d = digest(data)
    assert d.findings == []
    assert "SD01" in d.not_checked and "spec_decode" in d.not_checked["SD01"]
    assert "KV04" in d.not_checked and "sglang" in d.not_checked["KV04"]
    assert "SC01" in d.checked
    assert set(d.checked) | set(d.not_checked) == {r.code for r in all_rules()}


def test_select_and_ignore() -> None:
    from logscope.analyses.base import RunData

    data = RunData(events=[], engine="vllm", files=[])
    assert digest(data, select=["TK01"]).checked + list(digest(data, select=["TK01"]).not_checked) == ["TK01"]
    d = digest(data, ignore=["slow-tokenizer"])
    assert "TK01" not in d.checked and "TK01" not in d.not_checked
