"""HTML: one self-contained page, a strict Content-Security-Policy, every log text escaped."""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

import logscope
from logscope.plots import Plot, Plots
from logscope.render.html import CSS, render_html
from tests.render.cases import CASES, PAYLOAD, loaded, poisoned_log

ALLOWED_TAGS = {
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "main",
    "nav",
    "ul",
    "li",
    "a",
    "h1",
    "h2",
    "h3",
    "p",
    "strong",
    "code",
    "pre",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "div",
    "span",
    "figure",
    "img",
    "figcaption",
    "footer",
}


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> Tags:
    p = Tags()
    p.feed(html)
    return p


def fake_plots() -> Plots:
    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    )
    svg = (
        b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>'
    )
    return Plots(
        [Plot("throughput", "Throughput over time", "a caption <b>", png, svg)],
        {"Prefill chunk series": "why"},
    )


def test_page_is_self_contained_with_a_strict_csp() -> None:
    _run, report = loaded(CASES[0])
    html = render_html(report, fake_plots())
    tags = parse(html)
    names = {t for t, _a in tags.tags}
    assert names <= ALLOWED_TAGS, names - ALLOWED_TAGS
    assert "script" not in names and "link" not in names and "iframe" not in names
    metas = [a for t, a in tags.tags if t == "meta"]
    assert metas[0] == {"charset": "utf-8"}
    csp = next(a["content"] for a in metas if a.get("http-equiv") == "Content-Security-Policy")
    assert csp is not None
    assert "default-src 'none'" in csp and "img-src data:" in csp and "script-src" not in csp
    digest = base64.b64encode(hashlib.sha256(CSS.encode()).digest()).decode()
    assert f"style-src 'sha256-{digest}'" in csp
    assert html.count("<style>") == 1 and f"<style>{CSS}</style>" in html
    # nothing refers outside the page: images are data URIs, links are in-page anchors
    for tag, attrs in tags.tags:
        if tag == "img":
            assert (attrs.get("src") or "").startswith("data:image/svg+xml;base64,")
            assert attrs.get("alt")
        if tag == "a":
            assert (attrs.get("href") or "").startswith("#")
        assert "style" not in attrs and not any(k.startswith("on") for k in attrs)
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:|//|file:)""", html)
    assert "@media print" in CSS and "break-inside: avoid" in CSS


def test_png_when_asked() -> None:
    _run, report = loaded(CASES[0])
    html = render_html(report, fake_plots(), image_format="png")
    assert 'src="data:image/png;base64,' in html


def test_sections_figures_and_findings_are_there() -> None:
    _run, report = loaded(CASES[0])
    html = render_html(report, fake_plots())
    text = " ".join(parse(html).text)
    for heading in (
        "Summary",
        "Findings",
        "Stable decode",
        "Prefill",
        "Speculative decoding",
        "KV pool",
        "Cold start",
        "Disturbances",
        "Figures not drawn",
    ):
        assert heading in text
    assert 'id="fig-throughput"' in html and "a caption &lt;b&gt;" in html
    for f in report.findings:
        assert f.code in text


def test_log_text_is_escaped(tmp_path: Path) -> None:
    run = logscope.load(str(poisoned_log(tmp_path)))
    report = run.analyze()
    html = render_html(report)
    tags = parse(html)
    assert {t for t, _a in tags.tags} <= ALLOWED_TAGS
    assert not [a for t, a in tags.tags if t == "img"]  # the file name's <img> stayed text
    assert "<script" not in html.lower().replace("&lt;script", "")
    text = "".join(tags.text)
    assert "<script>window.__pwned=1</script></code></pre>[x](http://evil.example/a)" in text
    assert "<img src=x onerror=window.__pwned=2>" in text
    assert "\u202e" not in html


@pytest.mark.parametrize("name", CASES)
def test_case_pages_render(name: str) -> None:
    _run, report = loaded(name)
    html = render_html(report)
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert PAYLOAD not in html
