"""Changes that break `monitoring-images-pinned`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.rules.breaking import (
    caught,
    release,
    set_at,
)

# (policy, change, every fragment one message must contain), on the prod plan
PROD_CASES = {
    "webui image floats": (
        "monitoring-images-pinned",
        lambda r: set_at(release(r, "hami-webui"), ["values", "image", "frontend", "tag"], "main"),
        ["Release hami-webui: values.image.frontend", "floats", "set values.image.frontend.tag"],
    ),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_one_broken_monitoring_field_is_caught(plans, case):
    caught(plans["prod"], case, PROD_CASES[case])
