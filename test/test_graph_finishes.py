"""Twenty clean finishes of the BlockEnv graph, each with its final report: a module of its own,
so that the parallel group can run it on a worker beside test_graph_e2e's other graph cases."""

from __future__ import annotations

import os

import pytest
import yaml

from helpers import graphs, servers

pytestmark = [pytest.mark.slow, pytest.mark.ros]


#: launches at once, each on a domain of its own: the twenty take a quarter of the time, and the
#: manager's exit races the scorer's report on a busier machine than one graph alone makes
AT_ONCE = 4


def test_every_clean_finish_leaves_its_final_report(tmp_path, more_domains):
    """An independent run found the scorer's final report missing in 1 of 4 clean finishes (the
    manager exited 1 s after DONE and the shutdown cut the report off). The manager now exits
    once the scorer says the report is written: twenty short campaigns, twenty reports."""
    campaign = tmp_path / "short.yaml"
    campaign.write_text(yaml.safe_dump({"name": "short", "axis": "blockenv_depth", "world": "blockenv",
                                        "policies": ["blockenv_oracle"], "levels": [0, 1], "trials_per_level": 1,
                                        "seed": 2, "purpose": "certify"}))
    for first in range(0, 20, AT_ONCE):
        running, ports = [], set()
        for i in range(first, first + AT_ONCE):
            db, reports = tmp_path / f"r{i}.sqlite", tmp_path / f"reports{i}"
            port = servers.free_port()
            while port in ports:  # four at once: never one port twice
                port = servers.free_port()
            ports.add(port)
            env = dict(os.environ, ROS_DOMAIN_ID=str(more_domains()))
            # no recorder: the race was between the manager's exit and the scorer's report
            running.append((i, reports, graphs.launch(
                "blockenv_axis", f"db:={db}", f"report_dir:={reports}", f"port:={port}",
                f"server_uri:=ws://127.0.0.1:{port}", f"campaign:={campaign}", f"campaign_id:=short{i}",
                "record:=false", env=env)))
        for i, reports, launch in running:
            out = graphs.finish(launch, timeout=240)
            assert f"campaign short{i} done" in out
            assert (reports / f"short{i}" / "report.html").is_file(), out[-3000:]
            assert (reports / f"short{i}" / "report.md").read_text().count("## Campaign") == 1
