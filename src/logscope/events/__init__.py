"""The typed events every parser produces (see ``models``)."""

from logscope.events.construct import copy_event, make_event, restore_event
from logscope.events.models import (
    EVENT_TYPES,
    KINDS,
    AnyEvent,
    BenchResult,
    Compile,
    Config,
    DecodeBatch,
    EngineInit,
    Error,
    Event,
    GraphCapture,
    KvCachePool,
    KvCapacity,
    MaxConcurrency,
    MemoryProfile,
    ModelLoad,
    Oom,
    Preemption,
    PrefillBatch,
    PrefixCache,
    Retract,
    SchedulerLimits,
    ServerReady,
    ServerStart,
    SpecDecode,
    Throughput,
    Unparsed,
    Version,
    Warning_,
)

__all__ = [
    "EVENT_TYPES", "KINDS", "AnyEvent", "BenchResult", "Compile", "Config", "DecodeBatch", "EngineInit",
    "Error", "Event", "GraphCapture", "KvCachePool", "KvCapacity", "MaxConcurrency", "MemoryProfile",
    "ModelLoad", "Oom", "PrefillBatch", "PrefixCache", "Preemption", "Retract", "SchedulerLimits",
    "ServerReady", "ServerStart", "SpecDecode", "Throughput", "Unparsed", "Version", "Warning_", "copy_event", "make_event",
    "restore_event",
]
