"""What the HAMi release in a stack will do, read from its chart version and values."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pydantic import ValidationError

from gpushare import compat, names
from gpushare.catalog import CatalogError, load_catalog
from gpushare.hami import CapacityError, NodeCapacity, SharingProfile, node_capacity

from .kube import Pool, overlays_for, pools
from .stack import Resource, StackView

# scheduler.admissionWebhook in charts/hami/values.yaml 2.8.3: on, failing open, skipping no namespace by name
# (templates/scheduler/webhook.yaml also skips namespaces and pods labelled hami.io/webhook=ignore).
_WEBHOOK_DEFAULTS: dict[str, Any] = {"enabled": True, "failurePolicy": "Ignore", "whitelistNamespaces": None}
HAMI_RESOURCES = (names.GPU_MEMORY, names.GPU_CORES, names.GPU_MEMORY_PERCENTAGE)


@dataclass(frozen=True)
class Hami:
    resource: Resource
    version: str
    values: dict[str, Any]

    @classmethod
    def of(cls, view: StackView) -> Hami | None:
        """One model per view, so its validated profile is shared by every rule and pool."""
        return view.memo("hami", lambda: cls._read(view))

    @classmethod
    def _read(cls, view: StackView) -> Hami | None:
        release = view.release(names.HAMI_CHART)
        if release is None:
            return None
        values = release.get("values")
        return cls(release, str(release.get("version") or ""), values if isinstance(values, dict) else {})

    @property
    def known_version(self) -> bool:
        return self.version in compat.HAMI_CHART_VERSIONS

    @property
    def device_plugin(self) -> dict[str, Any]:
        section = self.values.get("devicePlugin")
        return section if isinstance(section, dict) else {}

    @property
    def selector_key(self) -> str:
        return compat.hami_node_selector_key(self.version)

    @property
    def webhook(self) -> dict[str, Any]:
        """scheduler.admissionWebhook as the chart renders it: the values over the chart defaults."""
        scheduler = self.values.get("scheduler")
        given = scheduler.get("admissionWebhook") if isinstance(scheduler, dict) else None
        return {**_WEBHOOK_DEFAULTS, **(given if isinstance(given, dict) else {})}

    @property
    def namespace(self) -> str:
        return str(self.values.get("namespaceOverride") or self.resource.get("namespace") or "default")

    @property
    def device_configmap(self) -> str:
        return compat.hami_device_configmap(self.resource.object_name, self.values)

    @cached_property
    def profile(self) -> SharingProfile:
        """The sharing profile in the values; the chart hard-codes memoryFactor 1 (HAMi chart device ConfigMap)."""
        keys = ("deviceSplitCount", "deviceMemoryScaling", "deviceCoreScaling")
        return SharingProfile.model_validate({k: self.device_plugin[k] for k in keys if k in self.device_plugin})

    @cached_property
    def profile_problems(self) -> list[tuple[str, Any, str]]:
        """(values key, value, why gpushare cannot model it) for each profile value the checks cannot use."""
        try:
            self.profile  # noqa: B018 - validating is the point
        except ValidationError as error:
            return [
                (f"values.devicePlugin.{detail['loc'][0]}", detail.get("input"), detail["msg"])
                for detail in error.errors(include_url=False)
            ]
        return []


def expected_capacity(hami: Hami, instance_type: str) -> NodeCapacity | str:
    """What a node of the type registers under the release's profile, or why that cannot be known."""
    try:
        catalog = load_catalog()
        return node_capacity(catalog, catalog.instance_type(instance_type), hami.profile)
    except CatalogError:
        return f"{instance_type} is not in the gpushare catalog (gpushare/catalog.yaml), so its GPU memory is unknown"
    except CapacityError as error:
        return str(error)
    except ValidationError as error:
        detail = error.errors(include_url=False)[0]
        return f"{hami.resource.label}: values.devicePlugin.{detail['loc'][0]} {detail['msg']}"


def is_hami_pool(view: StackView, pool: Pool) -> bool:
    """Labelled for HAMi sharing, or offered HAMi resources by an overlay: either way HAMi must serve it."""
    if pool.labels.get(names.SHARING_LABEL) == names.SHARING_HAMI:
        return True
    return any(
        resource in (overlay.get("spec", "capacity") or {})
        for instance_type in pool.instance_types or ()
        for overlay in overlays_for(view, pool, instance_type)
        for resource in HAMI_RESOURCES
    )


def hami_pools(view: StackView) -> list[Pool]:
    """The pools HAMi must serve (see is_hami_pool), sorted by name."""
    return [pool for pool in pools(view) if is_hami_pool(view, pool)]
