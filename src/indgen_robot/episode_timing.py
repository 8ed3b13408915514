"""Timing of one real-robot episode, as the runner measured it: the tick period and its
jitter, ticks without a usable command, ticks whose command came late (the arm held
meanwhile), the latency from a tick to its trajectory segment and the policy's round trip
(tick published to command received). Kept in the result's details,
so every real-robot trial carries how well its loop ran."""

from __future__ import annotations

import re

import numpy as np


def _percentiles(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    a = np.asarray(values) * 1000
    return {
        "p50": round(float(np.percentile(a, 50)), 3),
        "p99": round(float(np.percentile(a, 99)), 3),
        "max": round(float(a.max()), 3),
    }


class TickTimer:
    def __init__(self):
        self.ticks = 0
        self.missed = 0
        #: ticks whose command came after command_timeout_s: the arm held while the loop waited
        self.late_replies = 0
        #: why ticks had no usable command (figures as #), and how often
        self.miss_reasons: dict[str, int] = {}
        self._last: float | None = None
        self.periods: list[float] = []
        self.round_trips: list[float] = []
        self.latencies: list[float] = []
        #: the arm state's age (by its stamp) at each tick's check: its margin to the fault limit
        self.state_ages: list[float] = []

    def tick(self, t: float) -> None:
        if self._last is not None:
            self.periods.append(t - self._last)
        self._last = t
        self.ticks += 1

    def command(self, tick_time: float, answered: float, sent: float) -> None:
        self.round_trips.append(answered - tick_time)
        self.latencies.append(sent - tick_time)

    def miss(self, why: str = "") -> None:
        self.missed += 1
        kind = re.sub(r"\d+(\.\d+)?", "#", why)[:160]  # the same cause, whatever its figures
        if kind and (kind in self.miss_reasons or len(self.miss_reasons) < 20):
            self.miss_reasons[kind] = self.miss_reasons.get(kind, 0) + 1

    def late(self) -> None:
        self.late_replies += 1

    def state_age(self, age: float) -> None:
        if np.isfinite(age):
            self.state_ages.append(age)

    def rate_hz(self) -> float:
        recent = self.periods[-15:]
        return float(1.0 / np.mean(recent)) if recent else 0.0

    def summary(self) -> dict:
        periods = np.asarray(self.periods) * 1000
        return {
            "ticks": self.ticks,
            "missed_ticks": self.missed,
            "late_replies": self.late_replies,
            "miss_reasons": dict(self.miss_reasons),
            "tick_period_ms": _percentiles(self.periods),
            "jitter_ms": round(float(periods.std()), 3) if len(periods) else None,
            "command_latency_ms": _percentiles(self.latencies),
            "policy_round_trip_ms": _percentiles(self.round_trips),
            "arm_state_age_ms": _percentiles(self.state_ages),
            "round_trips_ms": [round(x * 1000, 3) for x in self.round_trips],
        }
