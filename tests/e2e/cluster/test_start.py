from __future__ import annotations

from typing import Any

import pytest

from e2e.cluster.start import established


def _crd(status: Any) -> dict[str, Any]:
    crd: dict[str, Any] = {"kind": "CustomResourceDefinition", "metadata": {"name": "nodepools.karpenter.sh"}}
    if status is not ...:
        crd["status"] = status
    return crd


ESTABLISHED = {"conditions": [{"type": "NamesAccepted", "status": "True"}, {"type": "Established", "status": "True"}]}


def test_every_crd_established() -> None:
    assert established({"items": [_crd(ESTABLISHED), _crd(ESTABLISHED)]})


@pytest.mark.parametrize(
    "status",
    [
        ...,  # just created: the API server has written no status yet (kubectl wait fails on it)
        None,
        {"conditions": None},
        {"conditions": [{"type": "NamesAccepted", "status": "True"}]},
        {"conditions": [{"type": "Established", "status": "False"}]},
    ],
)
def test_one_crd_not_yet_established_keeps_the_wait_going(status: Any) -> None:
    assert not established({"items": [_crd(ESTABLISHED), _crd(status)]})
