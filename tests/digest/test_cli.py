"""``logscope rules [CODE]`` and ``analyze --fail-on``, through click's CliRunner."""

from __future__ import annotations

from click.testing import CliRunner

from logscope.cli import main
from logscope.digest import all_rules
from logscope.digest.docs import rule_page
from tests.conftest import FIXTURES

CASES = FIXTURES / "digest"


def test_rules_lists_every_rule() -> None:
    r = CliRunner().invoke(main, ["rules"])
    assert r.exit_code == 0, r.output
    for cls in all_rules():
        assert cls.code in r.output and cls.slug in r.output


def test_rules_code_prints_the_docs_page() -> None:
    for key in ("KV01", "kv01", "kv-cache-overcommitted"):
        r = CliRunner().invoke(main, ["rules", key])
        assert r.exit_code == 0, r.output
        assert r.output == rule_page(all_rules()[[c.code for c in all_rules()].index("KV01")])


def test_unknown_rule_is_one_sentence_and_exit_3() -> None:
    r = CliRunner().invoke(main, ["rules", "XX99"])
    assert r.exit_code == 3  # no result (logscope.exits)
    assert r.output.startswith("logscope: ") and r.output.count("\n") == 1 and "XX99" in r.output


def test_fail_on() -> None:
    runner = CliRunner()
    warn_only = str(CASES / "TK01" / "fail-vllm.log")  # TK01, a warning
    crashed = str(CASES / "EN02" / "fail-sglang.log")  # EN02, an error
    clean = str(CASES / "TK01" / "pass-vllm.log")
    assert runner.invoke(main, ["analyze", warn_only]).exit_code == 0  # default: never
    assert runner.invoke(main, ["analyze", warn_only, "--fail-on", "error"]).exit_code == 0
    r = runner.invoke(main, ["analyze", warn_only, "--fail-on", "warning"])
    assert r.exit_code == 1
    assert "logscope: 1 finding(s) at or above warning: TK01." in r.output
    assert (
        runner.invoke(main, ["analyze", crashed, "--fail-on", "error"]).exit_code == 2
    )  # an error finding fails
    assert runner.invoke(main, ["analyze", crashed, "--fail-on", "warning"]).exit_code == 2
    assert runner.invoke(main, ["analyze", clean, "--fail-on", "warning"]).exit_code == 0
    r = runner.invoke(main, ["analyze", clean, "--fail-on", "bogus"])
    assert r.exit_code == 3  # a usage error
