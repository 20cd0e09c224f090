"""Renderers: terminal (rich), tables, Markdown, JSON, HTML. They never parse; they print results."""
