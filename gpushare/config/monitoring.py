"""The schema of gpushare:monitoring: the stack's Prometheus or an existing one, alerts and their receiver."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from gpushare.config.base import ConfigModel
from gpushare.eks import EKS_STORAGE_CLASSES
from gpushare.errors import raise_at

# Kubernetes label syntax (apimachinery validation.IsQualifiedName / IsValidLabelValue).
_LABEL_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"


def _label_problem(key: str, value: str) -> str | None:
    """Why the API server refuses the label `key: value` on an object, or None."""
    prefix, _, name = key.rpartition("/")
    if not (re.fullmatch(_LABEL_NAME, name) and len(name) <= 63) or (
        prefix and not (re.fullmatch(_DNS_SUBDOMAIN, prefix) and len(prefix) <= 253)
    ):
        return f"{key!r} is not a label key; allowed: [prefix/]name, name up to 63 of A-Z a-z 0-9 - _ ."
    if value and not (re.fullmatch(_LABEL_NAME, value) and len(value) <= 63):
        return f"{value!r} is not a label value; allowed: up to 63 of A-Z a-z 0-9 - _ ., alphanumeric ends"
    return None


class ExistingPrometheusConfig(ConfigModel):
    """A Prometheus the user already runs: the stack only adds scrape objects, rules and the dashboard."""

    url: str = Field(
        pattern=r"^https?://[^\s/]+(:[0-9]+)?(/\S*)?$",
        description="HTTP address of its query API, as the WebUI reaches it (http://<service>.<namespace>.svc:9090)",
    )
    labels: dict[str, str] = Field(
        default={},
        description="Labels its serviceMonitorSelector/ruleSelector match, added to every object the stack creates",
    )

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        raise_at([((key,), problem) for key, label in value.items() if (problem := _label_problem(key, label))])
        return value


class AlertThresholdsConfig(ConfigModel):
    """When the GPU alerts fire; minutes are how long a condition must hold first."""

    node_claim_not_initialized_minutes: int = Field(
        default=15,
        alias="nodeClaimNotInitializedMinutes",
        ge=1,
        le=1440,
        description="A GPU NodeClaim still not Initialized after this long (ResourceNotRegistered)",
    )
    pod_pending_minutes: int = Field(
        default=15, alias="podPendingMinutes", ge=1, le=1440, description="A pod requesting GPUs Pending this long"
    )
    node_idle_minutes: int = Field(
        default=60, alias="nodeIdleMinutes", ge=5, le=10080, description="A GPU node idle (no vGPU allocated) this long"
    )
    node_idle_utilization_percent: int = Field(
        default=5,
        alias="nodeIdleUtilizationPercent",
        ge=1,
        le=100,
        description="Below this average GPU utilization a node counts as idle (at least 1: utilization is never below "
        "0, so 0 could never fire)",
    )
    quota_use_percent: int = Field(
        default=90,
        alias="quotaUsePercent",
        ge=1,
        le=99,
        description="A team's GPU ResourceQuota used above this share of its hard limit (at most 99: admission keeps "
        "use within the limit, so above 100 could never fire)",
    )
    component_down_minutes: int = Field(
        default=5,
        alias="componentDownMinutes",
        ge=1,
        le=120,
        description="HAMi scheduler or device-plugin monitor unreachable this long",
    )
    headroom_unsatisfied_minutes: int = Field(
        default=20,
        alias="headroomUnsatisfiedMinutes",
        ge=1,
        le=1440,
        description="A team's warm headroom (CapacityBuffer) not kept on existing nodes this long: longer than a GPU "
        "node takes to launch and initialize, so Karpenter cannot refill it (pool limit, capacity, missing template)",
    )


# A Kubernetes Secret name (DNS-1123 subdomain) and data key (ConfigMap/Secret key rules).
SECRET_NAME = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
SECRET_KEY = r"^[-._a-zA-Z0-9]{1,253}$"
ReceiverType = Literal["slack", "pagerduty", "webhook"]


class AlertReceiverConfig(ConfigModel):
    """Where Alertmanager sends every alert. The credential (Slack webhook URL, PagerDuty Events v2 routing key,
    webhook URL) stays in a Secret of the monitoring namespace that the stack names and never reads."""

    type: ReceiverType = Field(description="slack, pagerduty (Events API v2) or webhook")
    secret_name: str = Field(
        alias="secretName",
        pattern=SECRET_NAME,
        description="Secret in namespace monitoring holding the credential; create it yourself (kubectl create "
        "secret generic), Alertmanager starts once it exists",
    )
    secret_key: str = Field(
        alias="secretKey",
        pattern=SECRET_KEY,
        description="Key of that Secret: the Slack incoming-webhook URL, the PagerDuty routing key or the webhook URL",
    )
    slack_channel: str | None = Field(
        default=None,
        alias="slackChannel",
        pattern=r"^[#@][^\s#@]{1,80}$",
        description="type slack: #channel or @user to post to instead of the webhook's own channel",
    )

    @model_validator(mode="after")
    def _channel_for_slack(self) -> AlertReceiverConfig:
        if self.slack_channel is not None and self.type != "slack":
            raise ValueError(f"slackChannel is set but type is {self.type!r}; allowed only with type 'slack'")
        return self


class MonitoringConfig(ConfigModel):
    """Prometheus, scraping, GPU alerts, a Grafana dashboard and HAMi-WebUI; off unless enabled."""

    enabled: bool = Field(default=False, description="Deploy monitoring (on in prod)")
    retention: str = Field(
        default="15d",
        pattern=r"^[0-9]+(h|d|w)$",
        description="How long the stack's own Prometheus keeps samples (prometheusSpec.retention)",
    )
    storage_size: str = Field(
        default="50Gi",
        alias="storageSize",
        pattern=r"^[1-9][0-9]*Gi$",
        description="Persistent volume of the stack's own Prometheus",
    )
    storage_class: str = Field(
        default="gp2",
        alias="storageClass",
        description="StorageClass of that volume: one EKS creates (gp2, provisioned by the EBS CSI driver the stack "
        "installs); the stack creates no other",
    )
    existing_prometheus: ExistingPrometheusConfig | None = Field(
        default=None,
        alias="existingPrometheus",
        description="Use this Prometheus instead of deploying kube-prometheus-stack",
    )
    alerts: AlertThresholdsConfig = Field(default=AlertThresholdsConfig(), description="Alert thresholds")
    alert_receiver: AlertReceiverConfig | None = Field(
        default=None,
        alias="alertReceiver",
        description="Where the stack's Alertmanager sends alerts (unset: nowhere, the chart's \"null\" receiver)",
    )

    @field_validator("storage_class")
    @classmethod
    def _storage_class_exists(cls, value: str) -> str:
        """A claim on a class nobody created stays Pending and Prometheus never starts (the pack refuses it too)."""
        if value not in EKS_STORAGE_CLASSES:
            raise ValueError(
                f"{value!r} is no StorageClass the cluster has (EKS creates only {', '.join(EKS_STORAGE_CLASSES)}, "
                f"the stack none); allowed: {', '.join(EKS_STORAGE_CLASSES)}"
            )
        return value

    @model_validator(mode="after")
    def _no_key_without_effect(self) -> MonitoringConfig:
        """Keys whose effect needs what another key turns off: refused, so no one believes them applied. (Tuning
        keys of monitoring while it is off are only warned about: checks/ineffective.py.)"""
        problems: list[tuple[tuple[int | str, ...], str]] = []
        if not self.enabled:
            for field, value, what in (
                ("alertReceiver", self.alert_receiver, "no Alertmanager is deployed, so no alert ever reaches it"),
                (
                    "existingPrometheus",
                    self.existing_prometheus,
                    "the stack creates no scrape objects, rules or dashboard for that Prometheus",
                ),
            ):
                if value is not None:
                    problems.append(
                        ((field,), f"is set but enabled is false: {what}; allowed: enabled true, or drop {field}")
                    )
        elif self.existing_prometheus is not None:
            if self.alert_receiver is not None:
                problems.append(
                    (
                        ("alertReceiver",),
                        "is set with existingPrometheus, where the stack deploys no Alertmanager; allowed: one of "
                        "them (route alerts in your own Alertmanager)",
                    )
                )
            problems += [
                (
                    (key,),
                    f"{value!r} is set with existingPrometheus, where the stack deploys no Prometheus to keep or store "
                    f"samples: yours keeps its own settings; allowed: drop {key}",
                )
                for key, value in self.given("retention", "storage_size", "storage_class").items()
            ]
        raise_at(problems)
        return self
