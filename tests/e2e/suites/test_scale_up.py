"""The examples scenario's reading of HAMi's scheduler log: pure parts."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from e2e.suites.scale_up import HAMI_SCHEDULER_LOG, _hami_throttled

THROTTLED_LINE = (
    'I1128 13:53:38.998218   17931 request.go:683] "Waited before sending request" delay="1.39190816s" '
    'reason="client-side throttling, not priority and fairness" verb="PATCH" URL="https://127.0.0.1:6443/api/v1/x"\n'
)


def test_each_wait_on_hamis_client_limiter_is_counted(tmp_path: Path) -> None:
    log = tmp_path / HAMI_SCHEDULER_LOG
    log.write_text('I1128 13:53:39.006456 scheduler.go:999] "Attempting to bind pod to node"\n' + THROTTLED_LINE * 2)
    assert _hami_throttled(SimpleNamespace(log_dir=tmp_path)) == 2
    log.write_text('I1128 13:53:39.006456 scheduler.go:999] "Attempting to bind pod to node"\n')
    assert _hami_throttled(SimpleNamespace(log_dir=tmp_path)) == 0
