"""gpushare/config/monitoring.py: bad gpushare:monitoring values, each refused on one line naming the key."""

from __future__ import annotations

import pytest

from tests.gpushare.mutations import assert_one_line_names_the_key, set_key

BAD_MONITORING = [
    (
        "storage class the cluster lacks",
        set_key("gpushare:monitoring", {"storageClass": "gp3"}),
        "gpushare:monitoring.storageClass: 'gp3' is no StorageClass the cluster has (EKS creates only gp2, the stack "
        "none); allowed: gp2",
    ),
    (
        "Prometheus label key",
        set_key("gpushare:monitoring", {"existingPrometheus": {"url": "http://p.m.svc:9090", "labels": {"-x": "a"}}}),
        "gpushare:monitoring.existingPrometheus.labels.-x: '-x' is not a label key",
    ),
    (
        "Prometheus label value",
        set_key("gpushare:monitoring", {"existingPrometheus": {"url": "http://p.m.svc:9090", "labels": {"r": "a b"}}}),
        "gpushare:monitoring.existingPrometheus.labels.r: 'a b' is not a label value",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in BAD_MONITORING], ids=[c[0] for c in BAD_MONITORING])
def test_bad_monitoring_names_the_key(mutate, expected):
    assert_one_line_names_the_key(mutate, expected)
