"""Grammars for text no engine header claims: shared kinds any engine's output may contain."""

from __future__ import annotations

from logscope.parsers.bench import BENCH_GRAMMARS
from logscope.parsers.common import kv_capacity_grammar, oom_grammar
from logscope.parsers.grammar import Grammar
from logscope.parsers.requests import HTTP_ACCESS

GRAMMARS: list[Grammar] = [HTTP_ACCESS, kv_capacity_grammar("plain"), oom_grammar("plain"), *BENCH_GRAMMARS]
