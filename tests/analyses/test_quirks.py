"""Version quirks (analyses/quirks.py): a table of rows, applied by version to a section's method sentence."""

from __future__ import annotations

import logscope
from logscope.analyses.quirks import QUIRKS, quirks_for, version_tuple
from tests.conftest import FIXTURES


def test_version_strings_as_printed() -> None:
    assert version_tuple("0.32.0") == (0, 32, 0)
    assert version_tuple("v0.32.0") == (0, 32, 0)  # the engine line's form
    assert version_tuple("0.5.3.post1") == (0, 5, 3)
    assert version_tuple("0.4") == (0, 4, 0)
    assert version_tuple(None) is None and version_tuple("unknown") is None


def test_rows_select_by_engine_version_and_section() -> None:
    assert [q.source for q in quirks_for("vllm", "0.32.0", "prefill")] == [QUIRKS[0].source]
    assert "computed prompt tokens only" in quirks_for("vllm", "0.16.0", "prefill")[0].text
    assert "prefix-cache hits included" in quirks_for("vllm", "0.15.1", "prefill")[0].text
    assert "sglang#18570" in quirks_for("sglang", "0.5.9", "prefill")[0].text
    assert quirks_for("sglang", "0.5.7", "prefill") == [] and quirks_for("sglang", "0.5.23", "prefill") == []
    assert quirks_for("vllm", None, "prefill") == []  # unknown version: no claim either way
    assert quirks_for("vllm", "0.32.0", "stable_decode") == []


def test_real_vllm_032_run_says_it_in_the_prefill_method() -> None:
    rep = logscope.load(FIXTURES / "vllm/corpus/gen-d1_ctx512.log").analyze()
    assert rep.engine_version == "0.32.0" and rep.prefill is not None
    assert rep.prefill.method.endswith("first released in 0.16.0).")


def test_real_sglang_run_without_a_version_line_gets_no_claim() -> None:
    rep = logscope.load(
        FIXTURES / "sglang/corpus/gen-d1_ctx512.log"
    ).analyze()  # SGLang 0.5.23 prints no version
    assert rep.engine_version is None and rep.prefill is not None
    assert "18570" not in rep.prefill.method
