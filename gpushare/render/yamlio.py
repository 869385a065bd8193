"""Deterministic YAML for golden files and the offline plan: insertion order kept, no anchors."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml


# The pure-Python dumper on purpose: libyaml's emitter folds long double-quoted strings (the dashboard
# ConfigMap) at other places and drops the `...` after a lone scalar, so golden files would change.
class _PlainDumper(yaml.SafeDumper):
    """Shared sub-objects are written out in full; anchors make reviewed diffs unreadable."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_PlainDumper, sort_keys=False, default_flow_style=False, width=120)


def dump_all(documents: Iterable[Any]) -> str:
    return yaml.dump_all(
        documents, Dumper=_PlainDumper, sort_keys=False, default_flow_style=False, width=120, explicit_start=True
    )
