"""NodeOverlays pass the pinned NodeOverlay CRD: a refused one leaves its pool without its capacity."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpushare import names

from ..crd import OVERLAYS_CRD, integer, matches, overlay_label_refusal, quantities, required, requirements
from ..rule import Finding, Rule, finding
from ..stack import NODE_OVERLAY, StackView, sorted_by_name

# NodeOverlay (karpenter.sh_nodeoverlays.yaml, v1alpha1).
PRICE = re.compile(r"^[0-9]+(\.[0-9]+)?\Z")
PRICE_ADJUSTMENT = re.compile(
    r"^(([+-]{1}([0-9]*\.?[0-9]+))|(\+{1}[0-9]*\.?[0-9]+%)|(^(-[0-9]{1,2}(\.[0-9]+)?%)\Z)|(-100%))\Z"
)
RESERVED_CAPACITY = ("cpu", "memory", "ephemeral-storage", "pods")


def check_node_overlays(view: StackView, _config: None) -> Iterator[Finding]:
    """NodeOverlays (karpenter.sh/v1alpha1): a refused one leaves its pool without the capacity it promises."""
    crd = f"the NodeOverlay CRD ({OVERLAYS_CRD})"
    for overlay in sorted_by_name(view.of_type(NODE_OVERLAY)):
        spec = overlay.get("spec")
        yield from required(overlay, "spec", spec, crd, "give the overlay a spec")
        if not isinstance(spec, dict):
            continue
        price, adjustment = spec.get("price"), spec.get("priceAdjustment")
        if price is not None and adjustment is not None:
            yield finding(
                overlay,
                "spec.priceAdjustment",
                adjustment,
                f"{crd} refuses setting both 'price' and 'priceAdjustment'",
                "keep one",
            )
        yield from matches(overlay, "spec.price", price, PRICE, crd, 'write a plain price such as "0.5"')
        yield from matches(
            overlay,
            "spec.priceAdjustment",
            adjustment,
            PRICE_ADJUSTMENT,
            crd,
            'write a signed amount ("-0.5", "+1.2") or percentage ("+10%", "-15%")',
        )
        yield from integer(overlay, "spec.weight", spec.get("weight"), 1, 10000, crd)
        capacity = spec.get("capacity")
        for name in RESERVED_CAPACITY:
            if isinstance(capacity, dict) and name in capacity:
                yield finding(
                    overlay,
                    f'spec.capacity["{name}"]',
                    capacity[name],
                    f"{crd} refuses it (invalid resource restricted)",
                    "overlay only extended resources",
                )
        yield from quantities(overlay, "spec.capacity", capacity, crd)
        yield from requirements(
            overlay, "spec.requirements", spec.get("requirements"), crd, overlay_label_refusal, True
        )


RULE = Rule(
    name="node-overlay-crd-valid",
    order=29,
    description=f"Every NodeOverlay passes the pinned {names.NODE_OVERLAY_API} NodeOverlay CRD's schema and CEL "
    "rules: price or priceAdjustment, capacity names and quantities, weight and requirements.",
    why="The API server refuses such a NodeOverlay only at `pulumi up`, leaving the pool without its capacity.",
    remediation="Write the field as the CRD accepts it (the message names the field and the CRD's rule).",
    enforcement="mandatory",
    severity="high",
    check=check_node_overlays,
)
