"""Attacker-controlled text: what a request id, a prompt or a model path can put into a log line.

Each payload aims at one output: spreadsheet formulas (CSV), script and markup (HTML, Markdown),
terminal escape sequences (ANSI CSI, OSC titles and hyperlinks)."""

from __future__ import annotations

FORMULAS = (
    '=HYPERLINK("http://evil.example","x") warning',
    "+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
    "=1+1",
)
SCRIPTS = (
    "<script>window.__pwned = 1</script>",
    '<img src=x onerror="window.__pwned=1">',
    "</code></pre><svg onload=window.__pwned=1>",
    '"><iframe srcdoc="<script>parent.__pwned=1</script>">',
    '<a href="javascript:window.__pwned=1">x</a>',
)
MARKDOWN = (
    "`` <script>window.__pwned=1</script> ``",
    "[click](javascript:alert(1)) | cell | `tick",
    "![x](http://evil.example/track.png)",
    "<details open ontoggle=alert(1)>",
)
TERMINAL = (
    "\x1b]0;pwned title\x07",
    "\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\",
    "\x1b[2J\x1b[H cleared",
    "\x1b[31mred\x1b[0m",
    "\x9b31m C1 CSI",
)
ALL = FORMULAS + SCRIPTS + MARKDOWN + TERMINAL
