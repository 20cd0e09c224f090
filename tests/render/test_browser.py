"""The HTML report of a case fixture, opened in a real browser (Debian's headless Chromium, driven by
playwright): no console errors, no network request, every figure loaded and visible, printable, and a
``<script>`` that a log line carried did not run.

Skipped when Chromium or playwright is missing, unless ``LOGSCOPE_REQUIRE_BROWSER`` is set (CI sets
it, after ``.ci/run`` installed Chromium): then their absence fails the test.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from logscope.cli import main
from tests.render.cases import PAYLOAD, poisoned_log

CHROMIUM = os.environ.get("LOGSCOPE_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]

WATCH = """
window.__seen = {csp: [], errors: []};
document.addEventListener('securitypolicyviolation', e => window.__seen.csp.push(e.violatedDirective + ' ' + e.blockedURI));
window.addEventListener('error', e => window.__seen.errors.push(String(e.message || e.type)), true);
"""

IMAGES = """
Array.from(document.images).map(img => {
  const r = img.getBoundingClientRect(), s = getComputedStyle(img);
  return {alt: img.alt.slice(0, 40), complete: img.complete, naturalWidth: img.naturalWidth,
          naturalHeight: img.naturalHeight, width: r.width, height: r.height,
          shown: s.display !== 'none' && s.visibility !== 'hidden' && Number(s.opacity) > 0};
})
"""


def _browser() -> Any:
    required = bool(os.environ.get("LOGSCOPE_REQUIRE_BROWSER"))
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if required:
            pytest.fail("playwright is not installed (pip install -e '.[test]')")
        pytest.skip("playwright is not installed")
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        if required:
            pytest.fail(f"{CHROMIUM} is missing (apt-get install -y chromium)")
        pytest.skip(f"{CHROMIUM} is missing")
    return sync_playwright


def observe(path: Path) -> dict[str, Any]:
    """Open ``path`` in headless Chromium and report what happened (nothing may leave the page)."""
    sync_playwright = _browser()
    url = path.resolve().as_uri()
    obs: dict[str, Any] = {"console": [], "page_errors": [], "requests": [], "blocked": []}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})

            def route(rt: Any) -> None:
                if rt.request.url == url or rt.request.url.startswith("data:"):
                    rt.continue_()
                else:  # nothing else may be fetched: record it and refuse
                    obs["blocked"].append(rt.request.url)
                    rt.abort()

            context.route("**/*", route)
            context.add_init_script(WATCH)
            page = context.new_page()
            page.on(
                "console",
                lambda m: (
                    obs["console"].append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None
                ),
            )
            page.on("pageerror", lambda e: obs["page_errors"].append(str(e)))
            page.on("request", lambda q: obs["requests"].append(q.url))
            page.goto(url, wait_until="load")
            page.wait_for_load_state("networkidle")
            obs["images"] = page.evaluate(IMAGES)
            obs["visible"] = []
            for i in range(len(obs["images"])):
                img = page.locator("img").nth(i)
                img.scroll_into_view_if_needed()
                obs["visible"].append(img.is_visible())
            obs["pwned"] = page.evaluate("[window.__pwned, document.querySelectorAll('script').length]")
            obs["seen"] = page.evaluate("window.__seen")
            obs["body"] = page.inner_text("body")
            page.emulate_media(media="print")
            obs["printed"] = page.evaluate(IMAGES)
            obs["nav_hidden"] = (
                page.evaluate("getComputedStyle(document.querySelector('nav')).display") == "none"
            )
            obs["pdf"] = page.pdf(format="A4")
        finally:
            browser.close()
    obs["other_requests"] = [u for u in obs["requests"] if u != url and not u.startswith("data:")]
    return obs


def _report(tmp_path: Path) -> Path:
    log = poisoned_log(tmp_path)
    out = tmp_path / "report.html"
    r = CliRunner().invoke(main, ["analyze", str(log), "--format", "html", "-o", str(out)])
    assert r.exit_code == 0, r.output
    return out


def test_html_report_in_headless_chromium(tmp_path: Path) -> None:
    obs = observe(_report(tmp_path))
    assert obs["console"] == [] and obs["page_errors"] == [], (obs["console"], obs["page_errors"])
    assert obs["seen"] == {"csp": [], "errors": []}, obs["seen"]
    assert obs["blocked"] == [] and obs["other_requests"] == [], obs["requests"]
    assert obs["pwned"] == [None, 0], "a script from the log ran, or the page holds a script element"
    images = obs["images"]
    assert len(images) >= 3, images  # throughput timeline, spec acceptance, cold-start waterfall
    assert all(obs["visible"])
    for img in images + obs["printed"]:
        assert img["complete"] and img["naturalWidth"] > 0 and img["naturalHeight"] > 0, img
        assert img["width"] > 200 and img["height"] > 100 and img["shown"], img
    body = obs["body"]
    assert "<script>window.__pwned=1</script>" in body and "[x](http://evil.example/a)" in body
    assert PAYLOAD[:20] in body
    assert obs["nav_hidden"] and obs["pdf"][:5] == b"%PDF-" and len(obs["pdf"]) > 50_000


def test_the_checks_catch_a_bad_page(tmp_path: Path) -> None:
    """The same checks on a page spoiled the ways a renderer could go wrong: they must notice."""
    page = _report(tmp_path)
    html = page.read_text(encoding="utf-8")
    bad = html.replace(
        "<main>",
        '<main><script>window.__pwned=1</script><img src="http://evil.example/x.png">'
        '<p style="color:red">inline style</p><img src="data:image/png;base64,AAAA">',
        1,
    )
    spoiled = tmp_path / "spoiled.html"
    spoiled.write_text(bad, encoding="utf-8")
    obs = observe(spoiled)
    assert obs["pwned"][0] is None and obs["pwned"][1] == 1  # the CSP stopped the script...
    directives = " ".join(obs["seen"]["csp"])
    assert (
        "script-src" in directives and "img-src" in directives and "style-src" in directives
    )  # ...and said so
    assert obs["console"]  # CSP violations are console errors
    assert any(not (i["complete"] and i["naturalWidth"] > 0) for i in obs["images"])  # a broken image is seen
