"""The small trace the simulator's tests change one key at a time (a chat service on a diurnal curve, a batch of
embeddings), and its problems judged against a stack's own config."""

from __future__ import annotations

import copy
from typing import Any

from e2e.simulator.trace import Trace, trace_problems
from tests.conftest import raw_stack

CHAT = {
    "name": "chat",
    "team": "inference",
    "pool": "g4dn-shared",
    "gpuMemoryMib": 1536,
    "gpuCores": 10,
    "diurnal": {"trough": 2, "peak": 20, "peakAt": "14:00"},
}
BATCH = {
    "name": "embed",
    "team": "ml-research",
    "pool": "g5-shared",
    "gpuMemoryMib": 8192,
    "gpuCores": 50,
    "arrivals": [{"at": "00:30", "count": 2, "durationMinutes": 60}],
}


def raw_trace(**changes: Any) -> dict[str, Any]:
    return {"stack": "dev", "deployments": [copy.deepcopy(CHAT)], **changes}


def sample_trace(**changes: Any) -> Trace:
    return Trace.model_validate(raw_trace(**changes))


def problems_of(raw: dict[str, Any], stack: str = "dev") -> list[str]:
    return trace_problems(raw, raw_stack(stack))


def keys_of(problems: list[str]) -> list[str]:
    return [line.split(": ")[0] for line in problems]
