"""Hostile log text through every output format: nothing in a report runs or styles what it shows.

A log line is attacker-controlled (a request id, a prompt, a model path). The payloads go into a
kernel's name (it reaches the disturbances timeline and the JT01 finding's message and evidence), a
warning's and an error's message, and the file's name; then the report is written in every format:
HTML opened in headless Chromium (no script ran, no element a payload meant to make exists, nothing
fetched), Markdown rendered as GitHub would before sanitising (no payload became a tag or a link),
the terminal (no escape sequence reaches it), JSON (parses, holds the text as read)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from markdown_it import MarkdownIt
from rich.console import Console

import logscope
from logscope.cli import main
from logscope.render.terminal import render_terminal
from tests.conftest import FIXTURES
from tests.hostile.payloads import MARKDOWN, SCRIPTS, TERMINAL

# one line's worth: no line break inside (a \r or \n would start another line)
PAYLOAD = " ".join(SCRIPTS + MARKDOWN + TERMINAL)


def hostile_log(tmp: Path) -> Path:
    text = (FIXTURES / "case/vllm-64k.log").read_text(encoding="utf-8")
    assert "_zero_kv_blocks_kernel" in text
    text = text.replace("_zero_kv_blocks_kernel", PAYLOAD)
    text += (
        f"(APIServer pid=1) WARNING 10-18 17:19:50 [serving.py:1] request {PAYLOAD} was slow\n"
        f"(APIServer pid=1) ERROR 10-18 17:19:51 [serving.py:2] ValueError: model {PAYLOAD} not found\n"
    )
    out = tmp / 'run "<img src=x onerror=window.__pwned=2>" <svg onload=window.__pwned=3>.log'
    out.write_text(text, encoding="utf-8")
    return out


def _analyze(log: Path, fmt: str, out: Path | None = None) -> str:
    args = ["analyze", str(log), "--format", fmt] + (["-o", str(out)] if out else [])
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    return out.read_text(encoding="utf-8") if out else r.output


# what a payload would make, were it not escaped (as HTML elements or attributes)
MADE = re.compile(
    r"<(script|img|svg|iframe|details|a)\b[^>]*(onerror|onload|ontoggle|srcdoc|javascript:|evil\.example)"
    r"|<script\b",
    re.I,
)


def test_markdown_renders_no_payload_as_html(tmp_path: Path) -> None:
    md = _analyze(hostile_log(tmp_path), "markdown")
    assert "window.__pwned" in md and "evil.example" in md  # the text is there, as text
    html = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).render(md)
    assert not MADE.search(html), MADE.search(html)
    assert 'href="javascript:' not in html and 'src="http://evil.example' not in html
    assert "\x1b" not in md and "\x07" not in md


def test_terminal_gets_no_escape_sequence(tmp_path: Path) -> None:
    report = logscope.load(str(hostile_log(tmp_path))).analyze()
    buf = io.StringIO()
    con = Console(file=buf, width=200, force_terminal=False, color_system=None)
    render_terminal(report, con)
    out = buf.getvalue()
    assert "window.__pwned" in out
    assert not re.search("[\x1b\x07\x9b\x90\x9d]", out), repr(
        re.search(".{20}[\x1b\x07\x9b\x90\x9d].{20}", out)
    )


def test_json_holds_the_text_as_read(tmp_path: Path) -> None:
    data = json.loads(_analyze(hostile_log(tmp_path), "json"))
    assert "<script>window.__pwned = 1</script>" in json.dumps(data, ensure_ascii=False)


def test_html_in_the_browser(tmp_path: Path) -> None:
    from tests.render.test_browser import observe

    page = tmp_path / "report.html"
    html = _analyze(hostile_log(tmp_path), "html", page)
    assert not MADE.search(html), MADE.search(html)
    obs = observe(page)
    assert obs["pwned"] == [None, 0], "a script from the log ran, or the page holds a script element"
    assert obs["seen"] == {"csp": [], "errors": []}, obs["seen"]
    assert obs["blocked"] == [] and obs["other_requests"] == [], obs["requests"]
    assert obs["page_errors"] == []
    assert "<script>window.__pwned = 1</script>" in obs["body"]  # shown as text


@pytest.mark.parametrize("fmt", ["markdown", "json", "text"])
def test_every_format_names_the_hostile_file_as_text(tmp_path: Path, fmt: str) -> None:
    out = _analyze(hostile_log(tmp_path), fmt)
    assert "onerror=window.__pwned=2" in out
