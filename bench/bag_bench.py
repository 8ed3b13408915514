"""What recording costs, and how fast a bag is read back.

    .venv/bin/python bench/bag_bench.py [--trials 2] [--cameras exterior_1,wrist] [--image-size 224]

The same twin stack campaign (oracle, levels 0 and 1, the built-in FR3) through the whole graph
twice: with the recorder (record:=true, the default) and without (record:=false). Prints the
campaign's wall time both ways and their ratio (the recorder's overhead on a 2-core machine,
where it competes with the simulator for the CPU), the bag's size and bytes per episode and
per control tick, then the times of `indgen bag` over it against the baseline of reading every
record of the bag (mcap, no decoding): info, rescore, latency, video (one per level) and a raw
read, with their ratios to the raw read; then rescore and replay in-process (no start-up) as
throughput against the least work each needs (reading the bag; reading it and sending each
recorded request to a policy server), target >= 0.9.
Runs on loopback in its own ROS domain.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", "93")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test"))  # the test helpers, `from helpers import ...`


def campaign_run(tmp: Path, name: str, record: bool, args) -> float:
    from helpers import servers

    campaign = tmp / f"{name}.yaml"
    campaign.write_text(yaml.safe_dump({"name": name, "axis": "stack", "world": "droid_twin",
                                        "policies": ["droid_twin_oracle"], "levels": [0, 1],
                                        "trials_per_level": args.trials, "seed": 3, "purpose": "certify"}))
    port = servers.free_port()
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "launch", "stack_axis", "sim:=true",
                           f"port:={port}", f"server_uri:=ws://127.0.0.1:{port}", f"db:={tmp / 'r.sqlite'}",
                           f"report_dir:={tmp / 'rep'}", f"campaign:={campaign}", f"campaign_id:={name}",
                           f"cameras:={args.cameras}", f"image_size:={args.image_size}", "builtin_fr3:=true",
                           "level_images:=false", f"record:={str(record).lower()}", f"bag_dir:={tmp / 'bags'}"],
                          capture_output=True, text=True, env=dict(os.environ, INDGEN_ARTIFACTS=str(tmp / "art")))
    took = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(f"the campaign failed:\n{proc.stdout[-3000:]}")
    return took


def timed(*cmd: str) -> float:
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", *cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr[-2000:]}")
    return time.monotonic() - start


def raw_read(bag: Path) -> tuple[float, int, int]:
    from indgen_core.bags.reader import BagReader

    start = time.monotonic()
    count = size = 0
    for record in BagReader(bag).records():
        count += 1
        size += len(record.data)
    return time.monotonic() - start, count, size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2, help="trials per level")
    parser.add_argument("--cameras", default="exterior_1,wrist")
    parser.add_argument("--image-size", type=int, default=224)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        without = campaign_run(tmp, "plain", False, args)
        with_bag = campaign_run(tmp, "recorded", True, args)
        [bag] = [p for p in (tmp / "bags").iterdir() if p.is_dir()]
        size = sum(p.stat().st_size for p in bag.glob("*.mcap"))
        from indgen_core.bags import latency, trials

        episodes = 2 * args.trials
        _, overall = latency.measure(trials.readers([bag]))
        ticks = overall["ticks"] or 1
        print(f"campaign ({episodes} episodes, cameras {args.cameras or 'none'} at {args.image_size} px):")
        print(f"  without recording  {without:7.1f} s")
        print(f"  with recording     {with_bag:7.1f} s   ratio {with_bag / without:.2f}")
        print(f"bag: {size / 2**20:.1f} MiB on disk, {size / episodes / 2**20:.2f} MiB per episode, "
              f"{size / ticks / 1024:.1f} KiB per control tick ({ticks} ticks)")
        base, count, raw = raw_read(bag)
        print(f"reading it back ({count} messages, {raw / 2**20:.1f} MiB uncompressed):")
        print(f"  raw read (baseline) {base:6.2f} s")
        for name, cmd in (("info", ["bag", "info", str(bag)]),
                          ("rescore", ["bag", "rescore", str(bag), "--db", str(tmp / "r.sqlite")]),
                          ("latency", ["bag", "latency", str(bag)]),
                          ("video", ["bag", "video", str(bag), "--out", str(tmp / "v")])):
            took = timed(*cmd)
            print(f"  indgen bag {name:<8} {took:6.2f} s   ratio {took / max(base, 1e-9):.1f} (includes ~1 s start-up)")
        in_process(bag, base)
    return 0


def in_process(bag: Path, base: float) -> None:
    """rescore and replay without the command's start-up, as throughput against the least work
    the same job needs: for rescore, reading the bag; for replay, reading the bag and sending
    each recorded request to the server (no decoding of replies, no comparison). Target >= 0.9."""
    from helpers import servers
    from indgen_core.bags import replay, rescore, trials
    from indgen_core.wire.client import RemotePolicy

    start = time.monotonic()
    rows = rescore.rescore(trials.read([bag]))
    took = time.monotonic() - start
    print("in-process throughput against its baseline (ratio = baseline time / time; target >= 0.9):")
    print(f"  rescore {len(rows)} trials      {took:6.2f} s   raw read {base:6.2f} s   ratio {base / took:.2f}")
    port = servers.free_port()
    server = servers.start_server("droid_twin_oracle", port)
    client = RemotePolicy(f"ws://127.0.0.1:{port}")
    try:
        client.connect()
        readers = trials.readers([bag])
        start = time.monotonic()
        sent = 0
        for record in trials.records(readers, {trials.POLICY_EXCHANGE}):
            client.infer_frame(bytes(trials.deserialize(record).request))
            sent += 1
        plain = time.monotonic() - start
        start = time.monotonic()
        recording = trials.read([bag])  # which trial is which level: a pass of its own
        pass_s = time.monotonic() - start
        result = replay.replay(trials.readers([bag]), recording, client)
        took = time.monotonic() - start
    finally:
        client.close()
        servers.stop(server)
    print(f"  replay {result.requests} requests  {took:6.2f} s   read + send {sent} {plain:6.2f} s   "
          f"ratio {plain / took:.2f} (largest difference {result.max_abs():.3g})")
    print(f"    of which the trials pass {pass_s:.2f} s; the request loop alone: ratio {plain / (took - pass_s):.2f}")


if __name__ == "__main__":
    raise SystemExit(main())
