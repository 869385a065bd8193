"""What a day asks for (e2e.simulator.demand): its horizon, its 00:00 state, the shortest-lived pods and the
busiest hour, from a trace."""

from __future__ import annotations

from tests.e2e.simulator.sample_trace import BATCH, CHAT, sample_trace


def test_a_batch_past_the_days_end_extends_the_horizon():
    demand = sample_trace(
        hours=6, jobs=[{**BATCH, "arrivals": [{"at": "05:30", "count": 1, "durationMinutes": 90}]}]
    ).demand()
    assert demand.day_minutes == 360
    assert demand.horizon_minutes == 420


def test_the_00_00_state_is_each_deployments_count_at_midnight():
    web = {"name": "web", "team": "inference", "pool": "g4dn-shared", "gpuMemoryMib": 1024, "gpuCores": 5}
    demand = sample_trace(deployments=[CHAT, {**web, "replicas": {"02:00": 3}}]).demand()
    assert demand.replicas_at_start() == {"chat": CHAT["diurnal"]["trough"] + 1, "web": 0}


def test_the_shortest_lived_deployment_pods_are_those_added_last_before_a_fall():
    """12 -> 20 at 03:00, down to 4 at 04:30: the eight added at 03:00 live 90 minutes, the ten added at 01:00
    (down at 04:30 too) 210; the 00:00 pods run before the clock and do not count."""
    steps = {"00:00": 2, "01:00": 12, "03:00": 20, "04:30": 4}
    chat = {**{k: v for k, v in CHAT.items() if k != "diurnal"}, "replicas": steps}
    assert sample_trace(deployments=[chat]).demand().shortest_life() == ("chat", 180, 90)
    rising = {**chat, "replicas": {"00:00": 2, "01:00": 12}}
    assert sample_trace(deployments=[rising]).demand().shortest_life() is None
    assert sample_trace(deployments=[{**chat, "replicas": {"00:00": 20, "01:00": 4}}]).demand().shortest_life() is None


def test_the_busiest_hour_counts_rises_and_arrivals_from_each_addition():
    """Ten replicas added at 01:00 and a batch of two at 00:30: the hour from 00:30 holds both (12 pods); the
    00:00 state is not an addition."""
    chat = {**{k: v for k, v in CHAT.items() if k != "diurnal"}, "replicas": {"00:00": 2, "01:00": 12}}
    assert sample_trace(deployments=[chat], jobs=[BATCH]).demand().busiest_hour() == (30, 12)
    assert sample_trace(deployments=[{**chat, "replicas": {"00:00": 2}}]).demand().busiest_hour() is None
