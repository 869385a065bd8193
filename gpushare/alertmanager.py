"""Alertmanager facts shared by the renderer (render/monitoring.py writes the routing tree and receivers) and the
policy pack (rule `alertmanager-secrets-and-routes` judges any Alertmanager config of a plan with `problems`).

Sources: Alertmanager v0.34.0 (kube-prometheus-stack 88.5.3's appVersion): every credential field and its `_file`
twin (config/config.go GlobalConfig, config/notifiers.go, notify/*/config.go: `commoncfg.Secret`, `SecretURL` and
`SecretTemplateURL` fields); prometheus/common config/http_config.go for `http_config`. The prometheus-operator
mounts each Secret of `alertmanagerSpec.secrets` at /etc/alertmanager/secrets/<name>/ and each ConfigMap of
`alertmanagerSpec.configMaps` at /etc/alertmanager/configmaps/<name>/ (pkg/alertmanager/statefulset.go). The
chart's default config (values.yaml alertmanager.config at 88.5.3) routes everything to the receiver "null", which
has no notifier.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

SECRETS_DIR: Final = "/etc/alertmanager/secrets"
CONFIG_MAPS_DIR: Final = "/etc/alertmanager/configmaps"
# kube-prometheus-stack's own receiver for what must reach no one: Watchdog (always firing, a dead man's switch for
# an external monitor) and InfoInhibitor (fires while info alerts exist, only to inhibit them).
NULL_RECEIVER: Final = "null"
SILENT_ALERTS: Final = ("Watchdog", "InfoInhibitor")
# What the chart's values.yaml (88.5.3) sets when values leave them out: Helm merges maps and replaces lists.
CHART_DEFAULT_ROUTE_RECEIVER: Final = NULL_RECEIVER
CHART_DEFAULT_RECEIVERS: Final = ({"name": NULL_RECEIVER},)
# The receivers the stack offers (gpushare:monitoring.alertReceiver.type): their notifier list and the field that
# reads the credential from a file.
RECEIVER_CONFIGS: Final = {
    "slack": ("slack_configs", "api_url_file"),
    "pagerduty": ("pagerduty_configs", "routing_key_file"),
    "webhook": ("webhook_configs", "url_file"),
}
# Notifier list -> its credential fields (each has a `<field>_file` twin that reads it from a mounted file).
RECEIVER_SECRETS: Final = {
    "discord_configs": ("webhook_url",),
    "email_configs": ("auth_password", "auth_secret"),
    "incidentio_configs": ("alert_source_token",),
    "mattermost_configs": ("webhook_url",),
    "msteams_configs": ("webhook_url",),
    "msteamsv2_configs": ("webhook_url",),
    "opsgenie_configs": ("api_key",),
    "pagerduty_configs": ("routing_key", "service_key"),
    "pushover_configs": ("user_key", "token"),
    "rocketchat_configs": ("token", "token_id"),
    "slack_configs": ("api_url", "app_token"),
    "telegram_configs": ("bot_token",),
    "victorops_configs": ("api_key",),
    "webhook_configs": ("url",),
    "wechat_configs": ("api_secret",),
}
GLOBAL_SECRETS: Final = (
    "mattermost_webhook_url",
    "opsgenie_api_key",
    "rocketchat_token",
    "rocketchat_token_id",
    "slack_api_url",
    "slack_app_token",
    "smtp_auth_password",
    "smtp_auth_secret",
    "telegram_bot_token",
    "victorops_api_key",
    "wechat_api_secret",
)
# Anywhere inside an `http_config` (basic_auth.password, authorization.credentials, oauth2.client_secret, ...).
HTTP_SECRETS: Final = ("password", "credentials", "bearer_token", "client_secret")
# Credentials recognisable by their form wherever they are written: incoming-webhook URLs carry their own secret.
WEBHOOK_URLS: Final = re.compile(
    r"https://(hooks\.slack\.com/services/|discord(app)?\.com/api/webhooks/|[\w.-]+\.webhook\.office\.com/)"
)

Problem = tuple[str, Any, str, str]  # (key, value, what goes wrong, fix)


def effective(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config Alertmanager runs: the chart's default route receiver and receivers where the values leave them."""
    route = config.get("route") if isinstance(config.get("route"), Mapping) else {}
    receivers = config.get("receivers")
    return {
        **config,
        "route": {"receiver": CHART_DEFAULT_ROUTE_RECEIVER, **route},
        "receivers": receivers if isinstance(receivers, list) else [dict(r) for r in CHART_DEFAULT_RECEIVERS],
    }


def problems(config: Mapping[str, Any], secrets: Sequence[str], config_maps: Sequence[str]) -> list[Problem]:
    """What in an Alertmanager config (as the values set it) leaks a credential, reads a file its pod does not mount,
    or sends the root route nowhere; `secrets` and `config_maps` are what `alertmanagerSpec` mounts. Keys are
    relative to the config."""
    found = [*inline_credentials(config), *_unmounted_files(config, secrets, config_maps)]
    return found + _routes_to_nowhere(effective(config))


def inline_credentials(config: Mapping[str, Any]) -> Iterator[Problem]:
    """Every credential field written into the config instead of read from a file."""
    fix = "keep it in a Secret of the monitoring namespace, mount it with alertmanagerSpec.secrets and read it with "
    glob = config.get("global")
    for field in GLOBAL_SECRETS if isinstance(glob, Mapping) else ():
        if _set(glob.get(field)):
            yield f"global.{field}", "<inline>", _LEAK, f"{fix}{field}_file"
    for key, value in _walk(config):
        if "http_config." in f"{key}." and key.rsplit(".", 1)[-1] in HTTP_SECRETS and _set(value):
            yield key, "<inline>", _LEAK, f"{fix}the matching _file field"
    receivers = config.get("receivers")
    for i, receiver in enumerate(receivers if isinstance(receivers, list) else []):
        for configs, fields in RECEIVER_SECRETS.items():
            notifiers = receiver.get(configs) if isinstance(receiver, Mapping) else None
            for j, notifier in enumerate(notifiers if isinstance(notifiers, list) else []):
                for field in fields if isinstance(notifier, Mapping) else ():
                    if _set(notifier.get(field)):
                        yield f"receivers[{i}].{configs}[{j}].{field}", "<inline>", _LEAK, f"{fix}{field}_file"


_LEAK = (
    "a credential written into the config is stored in plain text in the Helm release, the Pulumi state and every "
    "plan and diff of the stack"
)


def _unmounted_files(
    config: Mapping[str, Any], secrets: Sequence[str], config_maps: Sequence[str]
) -> Iterator[Problem]:
    mounted = [f"{SECRETS_DIR}/{name}/" for name in secrets] + [f"{CONFIG_MAPS_DIR}/{name}/" for name in config_maps]
    for key, value in _walk(config):
        if key.endswith("_file") and isinstance(value, str) and value and not value.startswith(tuple(mounted)):
            yield (
                key,
                value,
                "no volume of the Alertmanager pod holds that file (alertmanagerSpec.secrets mounts "
                + (", ".join(mounted) or "nothing")
                + "): Alertmanager cannot read it and the notification fails",
                f"name the Secret in alertmanagerSpec.secrets and read {SECRETS_DIR}/<secret>/<key>",
            )


def _routes_to_nowhere(config: Mapping[str, Any]) -> list[Problem]:
    receivers = {str(r.get("name")): r for r in config["receivers"] if isinstance(r, Mapping)}
    notifying = sorted(name for name, receiver in receivers.items() if _notifies(receiver))
    route = config["route"]
    found: list[Problem] = []
    root = route.get("receiver")
    if root not in receivers:
        found.append(
            (
                "route.receiver",
                root,
                f"no receiver of that name is defined ({', '.join(receivers) or 'none'}): Alertmanager refuses the "
                "config and keeps running the previous one",
                "name a receiver of the receivers list",
            )
        )
    elif notifying and not _notifies(receivers[root]):
        found.append(
            (
                "route.receiver",
                root,
                f"the root route sends every alert no child route catches to a receiver without notifiers while "
                f"{', '.join(notifying)} is configured: those alerts reach no one",
                f"route the root to {notifying[0]} and only Watchdog and InfoInhibitor to {NULL_RECEIVER}",
            )
        )
    children = route.get("routes")
    for i, child in enumerate(children if isinstance(children, list) else []):
        if not isinstance(child, Mapping) or child.get("continue") is True or _matches_something(child):
            continue
        target = child.get("receiver")
        if notifying and target in receivers and not _notifies(receivers[target]):
            found.append(
                (
                    f"route.routes[{i}].receiver",
                    target,
                    "this child route has no matchers, so it takes every alert before the root's receiver does, and "
                    f"sends it to a receiver without notifiers: {', '.join(notifying)} never gets any",
                    f'give the route matchers (gpushare routes only alertname =~ "{"|".join(SILENT_ALERTS)}" there)',
                )
            )
    return found


def _notifies(receiver: Mapping[str, Any]) -> bool:
    return any(key.endswith("_configs") and value for key, value in receiver.items())


def _matches_something(route: Mapping[str, Any]) -> bool:
    """Whether a route narrows what it takes (any matcher form Alertmanager reads)."""
    return any(route.get(key) for key in ("matchers", "match", "match_re"))


def _set(value: Any) -> bool:
    return value is not None and value != ""


def _walk(data: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(data, Mapping):
        for name, value in data.items():
            path = f"{key}.{name}" if key else str(name)
            yield path, value
            yield from _walk(value, path)
    elif isinstance(data, list):
        for index, value in enumerate(data):
            path = f"{key}[{index}]"
            yield path, value
            yield from _walk(value, path)


def credential_urls(data: Any) -> Iterator[tuple[str, str]]:
    """(key, value) of every string holding an incoming-webhook URL, which is itself the credential."""
    for key, value in _walk(data):
        if isinstance(value, str) and WEBHOOK_URLS.search(value):
            yield key, value
