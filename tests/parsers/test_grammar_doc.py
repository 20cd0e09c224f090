"""docs/grammar.md is generated from the grammars' pyparsing form: the checked-in page must be the page
the grammars give today (regenerate: ``python -m logscope.parsers.grammar_doc > docs/grammar.md``)."""

from pathlib import Path

from logscope.parsers import dialect
from logscope.parsers.grammar_doc import page

DOC = Path(__file__).resolve().parents[2] / "docs" / "grammar.md"


def test_checked_in_page_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == page(), (
        "run: python -m logscope.parsers.grammar_doc > docs/grammar.md"
    )


def test_every_grammar_and_field_is_written_out() -> None:
    text = page()
    for engine in ("vllm", "sglang", None):
        for g in dialect(engine).grammars:
            assert f"### `{g.name}` → `{g.kind}`" in text
    # the stats line's fields, as the vLLM 0.32 corpus prints them, appear as named terminals
    for field in (
        "prompt_tok_s=<float>",
        "gen_tok_s=<float>",
        "running=<int>",
        "waiting=<int>",
        "gpu_kv_cache_pct=<float>",
        "prefix_cache_hit_pct=<float>",
    ):
        assert field in text
