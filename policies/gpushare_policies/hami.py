"""What the HAMi release in a stack will do, read from its chart version and values."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pydantic import ValidationError

from gpushare import compat, names
from gpushare.catalog import CatalogError, load_catalog
from gpushare.hami import CapacityError, NodeCapacity, SharingProfile, node_capacity
from gpushare.wording import Wording

from .kube import Pool, overlays_for, pools
from .stack import Resource, StackView, version_of

# scheduler.admissionWebhook in charts/hami/values.yaml 2.8.3 to 2.10.0: on, failing open, skipping no namespace by
# name (templates/scheduler/webhook.yaml also skips namespaces and pods labelled hami.io/webhook=ignore).
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
    def webhook_namespace_selector(self) -> dict[str, Any] | None:
        """The namespaceSelector of the chart's MutatingWebhookConfiguration (templates/scheduler/webhook.yaml): skip
        namespaces labelled hami.io/webhook=ignore and those in whitelistNamespaces; from 2.10.0 also the values'
        namespaceSelector, and none at all (every namespace) with manageNamespaceSelector false."""
        webhook = self.webhook
        newer = version_of(self.version) is not None and compat.hami_at_least(self.version, (2, 10, 0))
        if newer and webhook.get("manageNamespaceSelector") is False:
            return None
        label, ignore = names.HAMI_WEBHOOK_IGNORE
        expressions: list[Any] = [{"key": label, "operator": "NotIn", "values": [ignore]}]
        skipped = webhook.get("whitelistNamespaces")
        if isinstance(skipped, list) and skipped:
            expressions.append({"key": names.NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": skipped})
        given = webhook.get("namespaceSelector") if newer else None
        given = given if isinstance(given, dict) else {}
        expressions += given.get("matchExpressions") or []
        return {"matchLabels": given.get("matchLabels") or {}, "matchExpressions": expressions}

    @property
    def namespace(self) -> str:
        return str(self.values.get("namespaceOverride") or self.resource.get("namespace") or "default")

    @property
    def charges_quota(self) -> bool:
        """Whether HAMi's scheduler charges its own limits. quota keys without leaking them (2.10.0+)."""
        return version_of(self.version) is not None and compat.hami_at_least(
            self.version, compat.HAMI_QUOTA_RETURNS_CHARGE
        )

    @property
    def dra_enabled(self) -> bool:
        return dra_enabled(self.resource)

    @property
    def device_configmap(self) -> str:
        return compat.hami_device_configmap(self.resource.object_name, self.values)

    @cached_property
    def device_config(self) -> dict[str, Any] | str:
        """The `nvidia:` section of the device config the release writes (compat.hami_nvidia_config), or why it
        cannot be read."""
        try:
            return compat.hami_nvidia_config(self.version, self.values)
        except ValueError as error:
            return f"values.device-config.content {error}"

    @property
    def profile_key(self) -> str:
        """Where the release's sharing profile is set: its device config content, or the devicePlugin values the
        chart's template writes into it."""
        return (
            "values.device-config.content nvidia"
            if compat.hami_config_content(self.version, self.values)
            else ("values.devicePlugin")
        )

    @cached_property
    def profile(self) -> SharingProfile:
        """The sharing profile HAMi's device config holds; ValueError when it cannot be read or modelled."""
        nvidia = self.device_config
        if isinstance(nvidia, str):
            raise ValueError(nvidia)
        keys = ("deviceSplitCount", "deviceMemoryScaling", "deviceCoreScaling")
        return SharingProfile.model_validate(
            {
                **{k: nvidia[k] for k in keys if nvidia.get(k) is not None},
                "memoryFactor": compat.effective_memory_factor(nvidia.get("memoryFactor")),
            }
        )

    @cached_property
    def profile_problems(self) -> list[tuple[str, Any, str]]:
        """(values key, value, why gpushare cannot model it) for each profile value the checks cannot use."""
        if isinstance(self.device_config, str):
            return [("values.device-config.content", None, self.device_config)]
        try:
            self.profile  # noqa: B018 - validating is the point
        except ValidationError as error:
            return [
                (f"{self.profile_key}.{detail['loc'][0]}", detail.get("input"), Wording(SharingProfile).message(detail))
                for detail in error.errors(include_url=False)
            ]
        return []


def dra_enabled(release: Resource) -> bool:
    """values.dra.enabled on a HAMi chart that has the option (2.8-2.9): it then renders no device ConfigMap, device
    plugin, scheduler or their Services; chart 2.10.0 removed the option and ignores the key."""
    version = str(release.get("version") or "")
    has_option = version_of(version) is None or compat.hami_has_dra_option(version)
    return has_option and release.get("values", "dra", "enabled") is True


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
        return (
            f"{hami.resource.label}: {hami.profile_key}.{detail['loc'][0]}: {Wording(SharingProfile).message(detail)}"
        )
    except ValueError as error:
        return f"{hami.resource.label}: {error}"


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
