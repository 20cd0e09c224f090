"""``logscope --version`` and ``logscope doctor``: the scanner in use and the optional pieces."""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner

import logscope
from logscope.cli import main
from logscope.parsers.scan import scanner


def test_version_and_doctor_name_the_scanner_in_use() -> None:
    used = scanner(["INFO"]).name  # what the sparse reader builds: "hyperscan", "polars" or "python"
    r = CliRunner().invoke(main, ["--version"])
    assert r.exit_code == 0 and r.output.startswith(f"logscope {logscope.__version__} (Python ")
    r2 = CliRunner().invoke(main, ["doctor"])
    assert r2.exit_code == 0
    if used == "hyperscan":
        assert "scanner: hyperscan)" in r.output and "scanner   active: Hyperscan" in r2.output
    else:
        assert f"scanner: {used} fallback; faster: pip install hyperscan)" in r.output
    assert "requires  pyparsing " in r2.output and "MISSING" not in r2.output


def test_without_hyperscan_the_fallback_and_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "hyperscan", None)  # import hyperscan now raises ImportError
    assert scanner(["INFO"]).name == "polars"  # polars' Aho-Corasick stands in (polars is a dependency)
    r = CliRunner().invoke(main, ["doctor"])
    assert r.exit_code == 0
    assert (
        "scanner   missing: polars Aho-Corasick fallback" in r.output
        and "Hyperscan not installed" in r.output
    )
    assert "install: pip install hyperscan" in r.output
    r = CliRunner().invoke(main, ["--version"])
    assert "scanner: polars fallback; faster: pip install hyperscan)" in r.output
