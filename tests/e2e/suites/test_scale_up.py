"""The examples scenario's reading of HAMi's scheduler log: pure parts."""

from __future__ import annotations

from pathlib import Path

from e2e.suites.scale_up import hami_throttled

BIND = 'I1128 14:25:48.500919 scheduler.go:999] "Attempting to bind pod to node"\n'
SHORT = (
    'I1128 14:25:48.500919   23324 request.go:683] "Waited before sending request" delay="63.376856ms" '
    'reason="client-side throttling, not priority and fairness" verb="PATCH" URL="https://127.0.0.1:6443/x"\n'
)
LONG = (
    'I1128 13:53:38.998218   17931 request.go:683] "Waited before sending request" delay="1.39190816s" '
    'reason="client-side throttling, not priority and fairness" verb="PATCH" URL="https://127.0.0.1:6443/x"\n'
)
LONG_SUMMARY = (
    "I1128 13:53:38.998300   17931 request.go:697] Waited for 1.59s due to client-side throttling, not priority "
    "and fairness, request: POST:https://127.0.0.1:6443/x\n"
)


def test_each_wait_on_hamis_client_limiter_is_counted_with_the_longest(tmp_path: Path) -> None:
    log = tmp_path / "hami-scheduler.log"
    log.write_text(BIND + SHORT + LONG + LONG_SUMMARY)
    assert hami_throttled(log) == (3, 1.59)
    log.write_text(BIND + SHORT)
    count, longest = hami_throttled(log)
    assert (count, round(longest, 3)) == (1, 0.063)
    log.write_text(BIND)
    assert hami_throttled(log) == (0, 0.0)
