"""Simulated time's stamps: exact, strictly increasing, none a second early (the sum of float
seconds gave sec 0 at 0.9999999999999999 s: every whole second was stamped one second early, and
a trial's first request shared the previous trial's last stamp)."""

from __future__ import annotations

import pytest

pytest.importorskip("rclpy")


@pytest.mark.parametrize("control_dt", [1.0 / 15.0, 1.0 / 20.0, 0.1])
def test_sim_stamps_are_strictly_increasing_and_at_the_right_second(control_dt):
    from indgen_sim.ros.sim_bridge import sim_stamp

    previous = -1
    for ticks in range(0, 20_000):
        stamp = sim_stamp(ticks, control_dt)
        ns = stamp.sec * 1_000_000_000 + stamp.nanosec
        assert ns > previous, (ticks, stamp)
        assert stamp.sec == int(round(ticks * control_dt * 1e9) // 1_000_000_000)
        assert abs(ns - ticks * control_dt * 1e9) <= 1.0  # within a nanosecond of the true time
        assert 0 <= stamp.nanosec < 1_000_000_000
        previous = ns
    # the case found: 15 ticks of 1/15 s is 1 s, not 0 s
    assert (sim_stamp(15, 1.0 / 15.0).sec, sim_stamp(15, 1.0 / 15.0).nanosec) == (1, 0)
