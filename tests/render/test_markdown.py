"""Markdown: goldens of the case fixtures, the GitHub size limit, and untrusted log text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

import logscope
from logscope.render.content import LEVELS, report_doc
from logscope.render.doc import Code, Table
from logscope.render.markdown import (
    DEFAULT_LIMIT,
    GITHUB_LIMIT,
    code_block,
    code_span,
    escape,
    render_blocks,
    render_markdown,
    size,
)
from tests.conftest import check_golden
from tests.render.cases import CASES, PAYLOAD, loaded, poisoned_log

GOLDENS = Path(__file__).parent / "goldens"


def gfm() -> MarkdownIt:
    """CommonMark with GitHub's tables and strikethrough; raw HTML on, as on GitHub (which then sanitises)."""
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


@pytest.mark.parametrize("name", CASES)
def test_markdown_golden(name: str, update_goldens: bool) -> None:
    _run, report = loaded(name)
    check_golden(GOLDENS / f"{name}.md", render_markdown(report), update_goldens)


@pytest.mark.parametrize("name", CASES)
def test_summary_table_comes_first_and_sections_state_their_method(name: str) -> None:
    _run, report = loaded(name)
    md = render_markdown(report)
    lines = md.splitlines()
    assert lines[0].startswith("# logscope report: ")
    first_h2 = next(i for i, ln in enumerate(lines) if ln.startswith("## "))
    assert lines[first_h2] == "## Summary" and lines[first_h2 + 2].startswith("|")
    for section in ("stable_decode", "prefill", "spec_decode", "kv_pool", "cold_start", "disturbances"):
        if getattr(report, section) is not None:
            assert f"**Method:** {escape(getattr(report, section).method[:30])}" in md or "**Method:**" in md
        else:
            assert "not applicable" in md
    for f in report.findings:  # every finding with its evidence in a fenced block
        assert f"`{f.code}`" in md
        for e in f.evidence[:1]:
            assert f"{e.file}:{e.line}: " in md


def _tables(html: str) -> list[str]:
    return re.findall(r"<table>.*?</table>", html, re.S)


def _check_tables_whole(md: str) -> None:
    """Every table renders as a table whose rows all have the header's number of cells."""
    html = gfm().render(md)
    pipe_rows = [ln for ln in md.splitlines() if ln.startswith("|")]
    delimiters = [ln for ln in pipe_rows if re.fullmatch(r"\|(?:\s*:?-+:?\s*\|)+", ln)]
    assert len(re.findall(r"<tr>", html)) == len(pipe_rows) - len(delimiters)
    for tb in _tables(html):
        head = len(re.findall(r"<th[ >]", tb.split("</thead>")[0]))
        for row in re.findall(r"<tr>(.*?)</tr>", tb.split("</thead>")[1], re.S):
            assert len(re.findall(r"<td", row)) == head


def big_report():  # type: ignore[no-untyped-def]
    """A report far over GitHub's limit: the 64K case with its findings, timeline and evidence multiplied."""
    _run, report = loaded(CASES[-1])
    rep = report.model_copy(deep=True)
    many = []
    for i in range(40):
        for f in report.findings or []:
            ev = [e.model_copy(update={"text": e.text * 3, "line": e.line + i}) for e in f.evidence] * 4
            many.append(f.model_copy(update={"code": f"{f.code}", "evidence": ev, "count": i}))
    rep.findings = many
    if rep.disturbances is not None:
        rep.disturbances = rep.disturbances.model_copy(update={"timeline": rep.disturbances.timeline * 300})
    return rep


def test_big_report_is_summarised_under_the_limit_never_cut_mid_table() -> None:
    rep = big_report()
    full = render_blocks(report_doc(rep, 0))
    assert size(full) > GITHUB_LIMIT
    md = render_markdown(rep)
    assert size(md) <= DEFAULT_LIMIT < GITHUB_LIMIT
    assert "Summarised (detail level" in md and "to fit a GitHub comment" in md
    assert md.startswith("# logscope report") and md.endswith("\n")
    assert md.count("```") % 2 == 0
    _check_tables_whole(md)
    # each level says less than the one before
    sizes = [size(render_blocks(report_doc(rep, lv))) for lv in range(LEVELS)]
    assert sizes == sorted(sizes, reverse=True)


def test_small_limit_keeps_summary_and_counts_what_it_left_out() -> None:
    rep = big_report()
    md = render_markdown(rep, limit=6000)
    assert size(md) <= 6000
    assert "## Summary" in md and "findings; all are in the JSON report" in md
    _check_tables_whole(md)


@pytest.mark.parametrize("name", CASES)
def test_case_reports_fit_at_full_detail(name: str) -> None:
    _run, report = loaded(name)
    md = render_markdown(report)
    assert size(md) <= DEFAULT_LIMIT and "Summarised" not in md


def test_code_fences_outgrow_backticks() -> None:
    assert code_span("a ``` b") == "````a ``` b````"
    assert code_span("`x`") == "`` `x` ``"
    block = code_block(["x ````` y", "```"])
    fence = block.splitlines()[0][: -len("text")]
    assert fence == "`" * 6 and block.endswith("\n" + fence)
    tokens = gfm().parse(block)
    assert [t.type for t in tokens] == ["fence"] and tokens[0].content == "x ````` y\n```\n"


def test_escape_neutralises_markdown_html_and_mentions() -> None:
    html = gfm().render(escape("<b>x</b> *y* [a](http://e) _z_ @octocat &amp; a|b"))
    assert "<b>" not in html and "<em>" not in html and "<a " not in html
    assert "&lt;b&gt;" in html and "&amp;amp;" in html and "@\u200boctocat" in html


def test_log_text_renders_as_text(tmp_path: Path) -> None:
    run = logscope.load(str(poisoned_log(tmp_path)))
    report = run.analyze()
    md = render_markdown(report)
    html = gfm().render(md)
    # nothing from the log became markup: no script, no link, no image, no strikethrough, no emphasis
    for tag in ("<script", "<a ", "<img", "<s>", "<del>", "<em>", "<pre><code></code></pre>"):
        assert tag not in html, tag
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;&lt;/code&gt;&lt;/pre&gt;" in html
    assert "[x](http://evil.example/a)" in html  # the link as text
    # a mention outside code would ping @octocat on GitHub: prose puts it in a code span
    prose_text = [
        c.content
        for tok in gfm().parse(md)
        if tok.type == "inline"
        for c in tok.children or []
        if c.type == "text"
    ]
    assert not [x for x in prose_text if "@octocat" in x]
    assert "\u202e" not in md  # bidi override made visible
    # the evidence block holds the line whole, in one fence that is longer than the payload's backtick runs
    fences = [t for t in gfm().parse(md) if t.type == "fence"]
    assert any(PAYLOAD.split("```")[0][:40] in t.content for t in fences)
    assert not [t for t in gfm().parse(md) if t.type == "html_block"]


def test_tables_survive_pipes_in_log_text() -> None:
    blocks = [Table(("a", "b"), [((), ())]), Code(["x"])]
    from logscope.render.doc import c, t

    blocks = [Table(("what", "detail"), [((t("x"),), (c("a | b || c"), t(" and | d")))])]
    html = gfm().render(render_blocks(blocks))  # type: ignore[arg-type]
    assert html.count("<td") == 2 and "a | b || c" in html
