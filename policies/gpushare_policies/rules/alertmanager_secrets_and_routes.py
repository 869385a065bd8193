"""A receiver's credential lives in a Secret that Alertmanager mounts and reads, and nowhere else; the routing tree
sends alerts to a receiver that notifies someone.

Judged with gpushare/alertmanager.py: the kube-prometheus-stack release's `alertmanager.config` (or, with tplConfig,
its `stringConfig`) against the Secrets and ConfigMaps its `alertmanagerSpec` mounts; every ConfigMap holding an
Alertmanager config; and incoming-webhook URLs (which are their own credential) in any release's values or
ConfigMap.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from gpushare import alertmanager
from gpushare.files import SAFE_LOADER

from ..prometheus import kube_prometheus_stack
from ..rule import Finding, Rule, finding
from ..stack import HELM_RELEASE, Resource, StackView, sorted_by_name

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
ALERTMANAGER = ("values", "alertmanager")


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _release_config(release: Resource) -> tuple[str, Any]:
    """(values key, config) of the Alertmanager config the chart renders (templates/alertmanager/secret.yaml)."""
    if release.get(*ALERTMANAGER, "tplConfig") is True and release.get(*ALERTMANAGER, "stringConfig"):
        return "values.alertmanager.stringConfig", _parsed(release.get(*ALERTMANAGER, "stringConfig"))
    return "values.alertmanager.config", release.get(*ALERTMANAGER, "config")


def _parsed(text: Any) -> Any:
    try:
        return yaml.load(text, Loader=SAFE_LOADER) if isinstance(text, str) else None
    except yaml.YAMLError:
        return None


def _is_alertmanager_config(data: Any) -> bool:
    return isinstance(data, dict) and ("receivers" in data or "route" in data)


def _findings(
    resource: Resource, where: str, config: dict[str, Any], secrets: list[str], maps: list[str]
) -> Iterator[Finding]:
    for key, value, problem, fix in alertmanager.problems(config, secrets, maps):
        yield finding(resource, f"{where}.{key}", value, problem, fix)


def _credential_url(resource: Resource, key: str) -> Finding:
    return finding(
        resource,
        key,
        "<an incoming-webhook URL>",
        "the URL is itself the credential (anyone holding it can post): written here it is stored in plain text in "
        "the Helm release or ConfigMap, the Pulumi state and every plan and diff",
        "keep it in a Secret and have the component read it from a mounted file (gpushare:monitoring.alertReceiver "
        "names the Secret for Alertmanager)",
    )


def check_secrets_and_routes(view: StackView, _config: None) -> Iterator[Finding]:
    stack_prometheus = kube_prometheus_stack(view)
    for release in sorted_by_name(view.of_type(HELM_RELEASE)):
        judged = ""
        if release is stack_prometheus and release.get(*ALERTMANAGER, "enabled") is not False:
            judged, config = _release_config(release)
            spec = (*ALERTMANAGER, "alertmanagerSpec")
            if config is None or isinstance(config, dict):
                secrets, maps = _strings(release.get(*spec, "secrets")), _strings(release.get(*spec, "configMaps"))
                yield from _findings(release, judged, config or {}, secrets, maps)
        for key, _url in alertmanager.credential_urls(release.get("values")):
            if not (judged and f"values.{key}".startswith(f"{judged}.")):
                yield _credential_url(release, f"values.{key}")
    for config_map in sorted_by_name(view.of_type(CONFIG_MAP)):
        data = config_map.get("data")
        for key, text in sorted(data.items()) if isinstance(data, dict) else ():
            where, parsed = f'data["{key}"]', _parsed(text)
            if _is_alertmanager_config(parsed):
                for path, value, problem, fix in alertmanager.inline_credentials(parsed):
                    yield finding(config_map, f"{where}.{path}", value, problem, fix)
            elif isinstance(text, str) and alertmanager.WEBHOOK_URLS.search(text):
                yield _credential_url(config_map, where)


RULE = Rule(
    name="alertmanager-secrets-and-routes",
    order=72,
    description="No receiver credential (Slack/webhook URL, PagerDuty key, token, password) is written into Helm "
    "values or a ConfigMap; every *_file Alertmanager reads is in a Secret or ConfigMap alertmanagerSpec mounts; "
    "the root route (or a catch-all child route) does not send alerts to a receiver without notifiers while one "
    "with notifiers exists, and names a receiver that exists.",
    why="An inlined credential is stored in plain text in the Helm release, the Pulumi state and every plan; a file "
    "the pod does not mount, or a route to the null receiver, makes every notification fail or go nowhere while "
    "the stack looks wired to page someone.",
    remediation="Keep the Secret named in gpushare:monitoring.alertReceiver: gpushare mounts it, reads it with the "
    "receiver's *_file field and routes every alert but Watchdog and InfoInhibitor to it.",
    enforcement="mandatory",
    severity="high",
    check=check_secrets_and_routes,
)
