"""logscope: forensics for the logs of LLM inference engines (vLLM, SGLang).

    import logscope
    run = logscope.load("vllm.log")
    run.frame("throughput")
"""

from logscope.api import Run, iter_events, load
from logscope.errors import LogscopeError, UnreadableInput
from logscope.events import AnyEvent, Event

__all__ = ["AnyEvent", "Event", "LogscopeError", "Run", "UnreadableInput", "iter_events", "load"]
__version__ = "0.1.0"
