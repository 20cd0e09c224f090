"""The exit codes of ``logscope analyze`` and ``logscope compare``: one contract for CI (docs/guide.md,
docs/contract.md). Each code has one meaning:

| code | meaning |
|---|---|
| 0 | every gate passes (or no gate was asked for) |
| 1 | a gate warns: a finding at warning severity with ``--fail-on warning``, an SLO gate whose value is unknown, a comparison verdict INCONCLUSIVE |
| 2 | a gate fails: a finding at error severity with ``--fail-on error`` or ``warning``, an SLO gate that fails, a comparison verdict FAIL |
| 3 | no verdict: the input could not be read, a required input is missing (with ``--strict``: a ``--bench`` or ``--metrics`` file that gives nothing, an SLO gate or a compared metric that only one side has or none measures), or the command was called wrong (a usage error) |

The worst code wins (3 over 2 over 1 over 0). ``--shadow`` prints every verdict and exits 0 whatever
the gates say (3 stays 3: with nothing read there is nothing to report). ``--best-effort`` reports on
what could be read: inputs that are missing or cannot be opened are left out with a note, and 3 comes
only when nothing is left. ``ingest`` keeps its own code 1 (a run could not be stored; the others are).
"""

from __future__ import annotations

PASS = 0
WARN = 1
FAIL = 2
NO_RESULT = 3

VERDICT_CODES = {"PASS": PASS, "INCONCLUSIVE": WARN, "FAIL": FAIL}
