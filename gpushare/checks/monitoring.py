"""Cross-key checks of monitoring: alert waits the retention of the stack's own Prometheus lets fire."""

from __future__ import annotations

from gpushare.config import PROJECT, StackConfig
from gpushare.errors import ConfigError, ConfigErrors
from gpushare.metrics import duration_seconds


def check_alert_waits(config: StackConfig) -> None:
    """An alert that must hold longer than the stack's own Prometheus keeps samples restarts its wait from what is
    kept after every Prometheus restart: in practice it never fires."""
    monitoring = config.monitoring
    if not monitoring.enabled or monitoring.existing_prometheus is not None:
        return
    kept = int(duration_seconds(monitoring.retention) or 0) // 60  # the schema's pattern makes it a duration
    errors = [
        ConfigError(
            f"{PROJECT}:monitoring.alerts.{field.alias}",
            f"{minutes} minutes is longer than gpushare:monitoring.retention {monitoring.retention} ({kept} minutes): "
            f"the alert could never fire; allowed: at most {kept}, or a longer retention",
        )
        for name, field in type(monitoring.alerts).model_fields.items()
        if name.endswith("_minutes") and (minutes := getattr(monitoring.alerts, name)) > kept
    ]
    if errors:
        raise ConfigErrors(errors)
