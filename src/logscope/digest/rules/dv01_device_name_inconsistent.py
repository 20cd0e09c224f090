"""DV01: the device is named differently in different lines."""

from __future__ import annotations

import re
from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import EvidenceItem, Finding
from logscope.digest.registry import Rule, register
from logscope.events import Event

_NAME = re.compile(r"device_name=([A-Za-z0-9][A-Za-z0-9_\-]*?)(?=,|\.json|\s|$)")
_MIXED = re.compile(r"Detected different devices in the system: ([^\n]*?)(?:\. Please|$)")


@register
class DeviceNameInconsistent(Rule):
    """The GPU is identified under different names in different lines.

    What
        Kernel configuration files are looked up by the device name the engine detected, and the
        path is printed: ``Config file not found at .../E=385,N=256,device_name=NVIDIA_L20D,...json``
        or ``Using configuration from .../N=2112,K=7168,device_name=NVIDIA_B300_SXM6_AC,...json``.
        The rule collects every ``device_name=`` in the log and reports when they differ; it also
        reports SGLang's ``Detected different devices in the system: ...``.

    Why
        One server should see one kind of GPU. Two names mean that some code paths detected the
        device differently (a mis-reported name, a device-name override, mixed GPUs in one job):
        tuned kernel configs for the wrong GPU are used or missed, and backend choices keyed on the
        device (in the Kimi-K3 case, the DCP backend) may be wrong.

    Fix
        Check the real device (``nvidia-smi -L``) and find what reports the other name (an override
        environment variable, a driver or container image mismatch); on machines with mixed GPUs
        set ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` and pin ``CUDA_VISIBLE_DEVICES`` to one kind. Provide
        tuned kernel configs for the real device.

    References
        - SGLang fused MoE / W8A8 kernel config lookup (``get_device_name()`` in the config file name)
        - docs/design CASE: Kimi-K3, "Warnings worth a digest"
    """

    code = "DV01"
    slug = "device-name-inconsistent"
    title = "Device name inconsistent across lines"
    severity = "warning"
    confidence = "observed"
    anchors = ("device_name=", "Detected different devices")

    def check(self, ctx: Context) -> Iterable[Finding]:
        names: dict[str, list[Event]] = {}
        mixed: list[Event] = []
        for e in ctx.events:
            raw = e.raw
            if "device_name=" in raw:
                for m in _NAME.finditer(raw):
                    names.setdefault(m.group(1).upper().replace("-", "_"), []).append(e)
            if "Detected different devices" in raw and _MIXED.search(raw):
                mixed.append(e)
        if len(names) < 2 and not mixed:
            return []
        parts = [
            f"{name} ({len(evs)} line{'s' if len(evs) > 1 else ''}, first at line {evs[0].line})"
            for name, evs in sorted(names.items(), key=lambda kv: kv[1][0].line)
        ]
        evidence: list[EvidenceItem] = []
        counted: list[Event] = []
        if len(names) >= 2:
            msg = (
                f"The device is named differently across lines: {' vs '.join(parts)}. Kernel configs and backend "
                f"choices keyed on the device name may be taken for the wrong GPU."
            )
            ordered = sorted(names.items(), key=lambda kv: kv[1][0].line)
            evidence += [(evs[0], "device_name=") for _name, evs in ordered]
            usual = max(names, key=lambda k: len(names[k]))
            counted += [e for name, evs in ordered if name != usual for e in evs]
        else:
            mm = _MIXED.search(mixed[0].raw)
            msg = f"The engine detected different devices in the system: {mm.group(1) if mm else '?'} (line {mixed[0].line})."
        evidence += mixed[:2]
        counted += mixed
        fix = (
            "Check the real device (`nvidia-smi -L`) and what reports the other name (an override variable, a "
            "driver or image mismatch); on mixed machines set `CUDA_DEVICE_ORDER=PCI_BUS_ID` and pin "
            "`CUDA_VISIBLE_DEVICES` to one kind of GPU; provide tuned kernel configs for the real device."
        )
        return [self.finding(msg, fix, counted, evidence)]
