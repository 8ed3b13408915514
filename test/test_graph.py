"""One description of the node graph for both launch paths."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import types

import pytest
import yaml

from indgen_core import graph
from indgen_core.configfile import ConfigError
from indgen_core.nodes import launcher
from indgen_core.waiting import wait_until


def load_launch_file(repo, name="blockenv_axis"):
    spec = importlib.util.spec_from_file_location(f"{name}_launch", repo / "launch" / f"{name}.launch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_launch_file_and_indgen_launch_describe_the_same_graph(repo):
    module = load_launch_file(repo)
    nodes = module.describe(port="9001", server_uri="ws://127.0.0.1:9001", db="/tmp/x.sqlite")
    assert [n.name for n in nodes] == ["policy_server", "sim_bridge", "policy_node", "recorder", "scorer",
                                       "progression_manager"]
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "launch", "blockenv_axis", "--show", "port:=9001",
                           "server_uri:=ws://127.0.0.1:9001", "db:=/tmp/x.sqlite"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    shown = dict(line.split(": ", 1) for line in proc.stdout.strip().splitlines())
    for node in nodes:
        assert shown[node.name] == " ".join(launcher.command(node))
    pm = next(n for n in nodes if n.name == "progression_manager")
    assert pm.required and pm.parameters["db"] == "/tmp/x.sqlite"
    server = nodes[0]
    assert not server.ros and server.args == ("serve-policy", "--port", "9001", "--", "blockenv_oracle")
    assert server.respawn and not pm.respawn
    assert nodes[2].parameters == {"spec": "blockenv", "server_uri": "ws://127.0.0.1:9001"}


def test_generate_launch_description_builds_one_action_per_process(repo, monkeypatch):
    """launch and launch_ros are not on PyPI: stand-ins record what the launch file asks for."""
    made = []

    def recorder(kind):
        class Action:
            def __init__(self, *args, **kwargs):
                made.append((kind, args, kwargs))
                self.kind, self.kwargs = kind, kwargs

            def perform(self, context):
                return self.kwargs.get("default_value", "")
        return Action

    class LaunchConfiguration:
        def __init__(self, name):
            self.name = name

        def perform(self, context):
            return context.get(self.name, "")

    fake = {
        "launch": types.SimpleNamespace(LaunchDescription=lambda actions: actions),
        "launch.actions": types.SimpleNamespace(
            DeclareLaunchArgument=recorder("arg"), EmitEvent=recorder("emit"), ExecuteProcess=recorder("process"),
            OpaqueFunction=recorder("opaque"), RegisterEventHandler=recorder("handler")),
        "launch.event_handlers": types.SimpleNamespace(OnProcessExit=recorder("on_exit")),
        "launch.events": types.SimpleNamespace(Shutdown=recorder("shutdown")),
        "launch.substitutions": types.SimpleNamespace(LaunchConfiguration=LaunchConfiguration),
        "launch_ros": types.ModuleType("launch_ros"),
        "launch_ros.actions": types.SimpleNamespace(Node=recorder("node")),
        "launch_ros.parameter_descriptions": types.SimpleNamespace(
            ParameterValue=lambda value, value_type: ("ParameterValue", value, value_type)),
    }
    for name, module in fake.items():
        monkeypatch.setitem(sys.modules, name, module)
    description = load_launch_file(repo).generate_launch_description()
    declared = [kw for kind, _, kw in made if kind == "arg"]
    assert {d.get("default_value") for d in declared} >= {"8000", "blockenv_oracle"}
    opaque = description[-1]
    # ros2 launch hands every declared argument over as text: its default's, or the user's
    context = {args[0]: kw["default_value"] for kind, args, kw in made if kind == "arg"}
    context.update({"port": "9002", "policy": "blockenv_rnn", "start_policy_server": "true",
                    "server_uri": "ws://127.0.0.1:9002", "campaign": "c.yaml"})
    actions = opaque.kwargs["function"](context)
    nodes = [kw for kind, _, kw in made if kind == "node"]
    assert [n["executable"] for n in nodes] == ["sim_bridge", "policy_node", "recorder", "scorer",
                                                "progression_manager"]
    assert nodes[1]["parameters"] == [{"spec": ("ParameterValue", "blockenv", str),
                                       "server_uri": ("ParameterValue", "ws://127.0.0.1:9002", str)}]
    process = next(kw for kind, _, kw in made if kind == "process")
    assert process["cmd"] == ["indgen", "serve-policy", "--port", "9002", "--", "blockenv_rnn"]
    assert process["respawn"] is True and nodes[0]["respawn"] is True and "respawn" not in nodes[-1]
    assert any(kind == "on_exit" for kind, _, _ in made)  # the campaign's end ends the launch
    assert len(actions) == 7  # 6 processes + the shutdown handler of the required one


def test_profile_arguments_and_conditions(repo):
    profile = graph.load_profile("blockenv_axis")
    nodes = profile.resolve({"start_policy_server": "false", "checkpoint": "/ck/rnn.pt"})
    assert "policy_server" not in [n.name for n in nodes]
    with_ck = profile.resolve({"checkpoint": "/ck/rnn.pt"})[0]
    assert with_ck.args[-3:] == ("--checkpoint=/ck/rnn.pt", "--", "blockenv_oracle")
    pm = profile.resolve({"allow_uncertified": "true", "episode_timeout_s": "5"})[-1]
    assert pm.parameters["allow_uncertified"] is True and pm.parameters["episode_timeout_s"] == 5
    assert "-p allow_uncertified:=true" in " ".join(pm.argv())
    assert "-p db:=''" in " ".join(pm.argv())  # an empty string stays a string parameter
    with pytest.raises(ConfigError, match="unknown argument 'prot'"):
        profile.resolve({"prot": "1"})


@pytest.mark.parametrize("name", ["stack_axis", "scale_axis"])
def test_twin_axis_launch_files_and_the_sim_argument(repo, name):
    module = load_launch_file(repo, name)
    nodes = module.describe(cameras="exterior_1,wrist")
    assert nodes == graph.load_profile(name).resolve({"cameras": "exterior_1,wrist"})
    bridge = next(n for n in nodes if n.name == "sim_bridge")
    assert bridge.parameters["world"] == "droid_twin"
    assert bridge.parameters["world_options"] == "{cameras: [exterior_1,wrist], image_size: 224, builtin: False}"
    policy_node = next(n for n in nodes if n.name == "policy_node")
    assert policy_node.parameters == {"spec": "droid", "server_uri": "ws://127.0.0.1:8000",
                                      "cameras": "exterior_1,wrist", "privileged": True}
    pm = nodes[-1]
    axis = name.split("_")[0]
    assert pm.parameters["campaign"] == f"campaigns/twin_{axis}_oracle.yaml"  # scale_axis extends stack_axis
    mock = {n.name: n for n in module.describe(sim="false")}
    assert list(mock) == ["policy_server", "fr3_runner", "fr3_stand_in", "fr3_cameras", "policy_node", "recorder",
                          "scorer", "progression_manager"]
    assert mock["recorder"].parameters["split_mb"] == 1024.0
    assert mock["recorder"].parameters["robot"] == "fr3_robotiq_zed"  # its exclusions of the cell's raw streams
    assert mock["fr3_runner"].parameters["recovery"] == "stand_in"
    assert mock["progression_manager"].parameters["max_aborts_per_trial"] == 3
    assert "recorder" not in {n.name for n in module.describe(sim="false", record="false")}
    assert mock["policy_node"].parameters["robot"] == "fr3_robotiq_zed" and mock["policy_node"].parameters["privileged"]
    assert mock["progression_manager"].parameters["campaign"] == f"campaigns/fr3_{axis}_oracle.yaml"  # when: not sim
    real = {n.name: n for n in module.describe(sim="false", robot="real")}
    assert "fr3_stand_in" not in real and "fr3_cameras" not in real and "sim_bridge" not in real
    assert real["fr3_runner"].parameters["recovery"] == "franka"
    assert real["policy_node"].parameters["privileged"] is False  # no privileged state on a robot
    assert module.describe(sim="false", campaign="c.yaml")[-1].parameters["campaign"] == "c.yaml"


def test_a_profile_that_extends_another_changes_only_what_it_names(tmp_path, monkeypatch):
    graphs = tmp_path / "graphs"
    graphs.mkdir()
    (graphs / "base.yaml").write_text("name: base\narguments:\n  a: {default: 1, description: first}\n"
                                      "  b: {default: x}\n"
                                      "nodes:\n  - {name: n, executable: e, args: ['$(a)', '$(b)']}\n")
    (graphs / "child.yaml").write_text("name: child\nextends: base\narguments:\n  a: {default: 2}\n")
    (graphs / "loop.yaml").write_text("name: loop\nextends: loop\n")
    monkeypatch.setenv("INDGEN_CONFIG_DIR", str(tmp_path))
    child = graph.load_profile("child")
    assert child.spec.arguments["a"].description == "first"
    assert child.resolve()[0].args == ("2", "x")
    with pytest.raises(ConfigError, match="cycle"):
        graph.load_profile("loop")


def test_bad_assignments_and_profiles_are_one_sentence():
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "launch", "blockenv_axis", "port=1"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "arguments are written name:=value, got 'port=1'" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "launch", "nope"], capture_output=True, text=True)
    assert proc.returncode == 2
    known = "blockenv_axis, libero_axis, robocasa_axis, scale_axis, stack_axis"
    assert f"no graph profile 'nope'; known: {known}" in proc.stderr


def test_launcher_prefixes_output_and_stops_everything_on_sigterm(tmp_path):
    import io
    import threading

    out = io.StringIO()
    sleeper = graph.NodeSpec("sleeper", sys.executable, ros=False,
                             args=("-c", "import time, sys; print('up', flush=True); time.sleep(60)"))
    quick = graph.NodeSpec("worker", sys.executable, ros=False, required=True,
                           args=("-c", "import time; print('working', flush=True); time.sleep(60)"))
    run = launcher.Launcher([sleeper, quick], out=out, grace_s=2.0)
    run.start()
    threading.Timer(1.5, run.stop).start()
    code = run.wait()
    assert code == 130
    assert all(c.proc.poll() is not None for c in run.children)
    text = out.getvalue()
    assert "[sleeper] up" in text and "[worker] working" in text


def test_launcher_returns_the_required_nodes_status():
    import io

    done = graph.NodeSpec("pm", sys.executable, ros=False, required=True, args=("-c", "raise SystemExit(3)"))
    other = graph.NodeSpec("other", sys.executable, ros=False, args=("-c", "import time; time.sleep(60)"))
    run = launcher.Launcher([other, done], out=io.StringIO(), grace_s=2.0)
    run.start()
    assert run.wait() == 3
    assert run.children[0].proc.poll() is not None


def test_a_killed_launcher_leaves_no_process_behind(tmp_path):
    """SIGKILL gives the launcher no chance to clean up; its children must still go."""
    import signal
    import textwrap

    script = tmp_path / "launch_two.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        from indgen_core import graph
        from indgen_core.nodes import launcher
        nodes = [graph.NodeSpec(f"sleeper{{i}}", sys.executable, ros=False,
                                args=("-c", "import os, time; print(os.getpid(), flush=True); time.sleep(120)"))
                 for i in range(2)]
        launcher.run(nodes, out=open({str(tmp_path / 'out.txt')!r}, 'w'))
    """))
    proc = subprocess.Popen([sys.executable, str(script)])
    out = tmp_path / "out.txt"
    pids = []

    def both_up() -> bool:
        nonlocal pids
        if out.exists():
            pids = [int(line.split()[-1]) for line in out.read_text().splitlines() if line.startswith("[sleeper")]
        return len(pids) >= 2

    wait_until(both_up, 30, poll=0.1)
    assert len(pids) == 2
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    wait_until(lambda: not any(_alive(p) for p in pids), 10, poll=0.1)
    assert not any(_alive(p) for p in pids), "a child outlived its launcher"


def test_a_niced_launch_runs_its_nodes_niced(tmp_path):
    """Each node runs in its own session, hence (Linux autogroup scheduling) its own scheduling
    group, where a nice value inherited from the launcher alone would not count: the group must
    be niced too, or `nice indgen launch` leaves its graph at full priority."""
    import textwrap

    if not os.path.exists("/proc/self/autogroup"):
        pytest.skip("this kernel schedules without autogroups (no /proc/self/autogroup): nothing to pass on")
    script = tmp_path / "launch_niced.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys
        from indgen_core import graph
        from indgen_core.nodes import launcher
        os.nice(7)  # from 7 up to 19 where the suite runs niced already
        print(launcher._niceness(), flush=True)
        # the launcher sets the group once the node has started: the node looks for up to 10 s
        shows = ("import os, time\\n"
                 "end = time.monotonic() + 10\\n"
                 "while (nice := open('/proc/self/autogroup').read().split()[-1]) == '0' and time.monotonic() < end:\\n"
                 "    time.sleep(0.01)\\n"
                 "print(os.getsid(0) == os.getpid(), nice)")
        node = graph.NodeSpec("shows", sys.executable, ros=False, required=True, args=("-c", shows))
        sys.exit(launcher.run([node], out=open({str(tmp_path / 'out.txt')!r}, 'w')))
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    [line] = [line for line in (tmp_path / "out.txt").read_text().splitlines() if line.startswith("[shows]")]
    niceness = int(proc.stdout.split()[0])
    assert niceness >= 7 and line == f"[shows] True {niceness}"  # its own session, its group niced as the launcher


def _alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie has exited already
        return fh.read().split()[2] != "Z"


def test_libero_launch_file_passes_task_axis_and_levels_to_the_progression_manager(repo):
    nodes = load_launch_file(repo, "libero_axis").describe(axis="libero_goal_y", task="3", levels="-1,0,1")
    assert nodes == graph.load_profile("libero_axis").resolve({"axis": "libero_goal_y", "task": "3",
                                                                "levels": "-1,0,1"})
    pm = nodes[-1]
    assert (pm.parameters["axis"], pm.parameters["world_options"], pm.parameters["levels"]) == (
        "libero_goal_y", "{task: 3}", "[-1,0,1]")
    assert "-p levels:='[-1,0,1]'" in " ".join(pm.argv())  # stays a string parameter
    bridge = next(n for n in nodes if n.name == "sim_bridge")
    assert bridge.parameters["world"] == "libero"


def test_launch_arguments_stay_what_they_were_given():
    profile = graph.load_profile("stack_axis")
    pm = profile.resolve({"override_reason": "reviewed: ok", "campaign_id": "c-1"})[-1]
    assert pm.parameters["override_reason"] == "reviewed: ok"  # a sentence, not a YAML mapping
    assert "override_reason:='reviewed: ok'" in pm.argv()
    quoted = profile.resolve({"override_reason": "it's 'fine'"})[-1]
    assert "override_reason:='it''s ''fine'''" in quoted.argv()  # YAML single-quote escaping
    assert profile.resolve({"episode_timeout_s": "5"})[-1].parameters["episode_timeout_s"] == 5.0
    refusals = {
        "policy": ("--host=0.0.0.0", "argument 'policy' must match"),
        "episode_timeout_s": ("abc", "argument 'episode_timeout_s' must be a number, got 'abc'"),
        "port": ("80; rm", "argument 'port' must be an integer"),
        "sim": ("maybe", "argument 'sim' must be true or false, got 'maybe'"),
        "cameras": ("wrist], evil: [x", "argument 'cameras' must match"),
        "campaign_id": ("../../x", "argument 'campaign_id' must match"),
    }
    for name, (value, sentence) in refusals.items():
        with pytest.raises(ConfigError, match=re.escape(sentence)):
            profile.resolve({name: value})


def test_a_value_never_becomes_an_option_of_the_command(tmp_path):
    """Even in a profile without patterns, a positional value follows '--'."""
    graphs = tmp_path / "graphs"
    graphs.mkdir()
    (graphs / "open.yaml").write_text(
        "name: open\narguments:\n  policy: {default: x}\n"
        "nodes:\n  - {name: s, executable: indgen, ros: false,\n"
        "     args: [serve-policy, '--port', '0', '--', '$(policy)']}\n")
    env = dict(os.environ, INDGEN_CONFIG_DIR=str(tmp_path))
    shown = subprocess.run([sys.executable, "-m", "indgen_core.cli", "launch", "open", "--show",
                            "policy:=--host=0.0.0.0"], capture_output=True, text=True, env=env)
    assert shown.returncode == 0 and shown.stdout.strip().endswith("serve-policy --port 0 -- --host=0.0.0.0")
    served = subprocess.run([sys.executable, "-m", "indgen_core.cli", "serve-policy", "--port", "0", "--",
                             "--host=0.0.0.0"], capture_output=True, text=True, timeout=60)
    assert served.returncode == 2 and "unknown policy '--host=0.0.0.0'" in served.stderr


def test_a_bad_parameter_type_is_one_sentence_naming_it():
    proc = subprocess.run([graph.executable_path("scorer"), "--ros-args", "-p", "write_report:=maybe"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "parameter 'write_report' of scorer must be true or false, got 'maybe'" in proc.stderr
    assert "Traceback" not in proc.stderr


STUBBORN = """
import signal, sys, time
t0 = time.monotonic()
def note(sig, _):
    with open(sys.argv[1], "a") as fh:
        fh.write(f"{signal.Signals(sig).name} {time.monotonic() - t0:.2f}\\n")
signal.signal(signal.SIGINT, note)
signal.signal(signal.SIGTERM, note)
print("up", flush=True)
while True:
    time.sleep(0.05)
"""


# bound to the wall clock: the child stamps each signal when it handles it, and at the lowest
# priority beside the realtime cases a starved child stamped SIGTERM 2.72 s after SIGINT
@pytest.mark.realtime
def test_launcher_escalates_sigint_sigterm_sigkill_on_a_child_that_ignores_them(tmp_path):
    import io
    import time

    log = tmp_path / "signals.txt"
    stubborn = graph.NodeSpec("stubborn", sys.executable, ros=False, args=("-c", STUBBORN, str(log)))
    out = io.StringIO()
    run = launcher.Launcher([stubborn], out=out, grace_s=1.0)
    run.start()
    wait_until(lambda: "[stubborn] up" in out.getvalue(), 20, poll=0.05)
    t0 = time.monotonic()
    run.shutdown()
    took = time.monotonic() - t0
    lines = [line.split() for line in log.read_text().splitlines()]
    assert [name for name, _ in lines] == ["SIGINT", "SIGTERM"]
    assert run.children[0].proc.returncode == -9  # and SIGKILL last
    gap = float(lines[1][1]) - float(lines[0][1])
    assert 0.8 <= gap <= 2.5, gap  # SIGTERM only after the 1 s grace period
    assert 3.5 <= took <= 8.0, took  # SIGKILL 3 s after SIGTERM


FLAKY = """
import pathlib, sys, time
m = pathlib.Path(sys.argv[1])
n = int(m.read_text()) + 1 if m.exists() else 1
m.write_text(str(n))
print("run", n, flush=True)
if n < 3:
    sys.exit(7)
time.sleep(60)
"""
WAIT_FOR_3 = """
import pathlib, sys, time
m = pathlib.Path(sys.argv[1])
while not (m.exists() and m.read_text() == "3"):
    time.sleep(0.1)
time.sleep(0.5)
"""


def test_a_respawn_node_is_restarted_and_the_launch_goes_on(tmp_path):
    import io

    marker = tmp_path / "runs"
    flaky = graph.NodeSpec("flaky", sys.executable, ros=False, respawn=True, args=("-c", FLAKY, str(marker)))
    pm = graph.NodeSpec("pm", sys.executable, ros=False, required=True, args=("-c", WAIT_FOR_3, str(marker)))
    out = io.StringIO()
    run = launcher.Launcher([flaky, pm], out=out, grace_s=2.0)
    run.start()
    assert run.wait() == 0
    text = out.getvalue()
    assert text.count("died with status 7; restarting it in 1 s") == 2 and "[flaky] run 3" in text
    assert run.children[0].respawns == 2


def test_enclaves_give_each_ros_node_its_own_sros2_enclave():
    nodes = graph.load_profile("blockenv_axis").resolve({"enclaves": "/indgen"})
    by_name = {n.name: n for n in nodes}
    assert by_name["scorer"].enclave == "/indgen/scorer"
    assert "--enclave /indgen/scorer" in " ".join(by_name["scorer"].argv())
    assert by_name["policy_server"].enclave == ""  # not a ROS node
    assert all(n.enclave == "" for n in graph.load_profile("blockenv_axis").resolve())
    with pytest.raises(ConfigError, match="argument 'enclaves' must match"):
        graph.load_profile("blockenv_axis").resolve({"enclaves": "indgen; rm"})


def test_a_node_that_cannot_start_is_not_respawned_forever():
    import io

    always = graph.NodeSpec("broken", sys.executable, ros=False, respawn=True, args=("-c", "raise SystemExit(7)"))
    other = graph.NodeSpec("other", sys.executable, ros=False, args=("-c", "import time; time.sleep(60)"))
    out = io.StringIO()
    assert launcher.Launcher([always, other], out=out, grace_s=2.0).wait_started() == 1
    assert "died 3 times within 10 s of starting; not restarting it" in out.getvalue()
    misconfigured = graph.NodeSpec("bad", sys.executable, ros=False, respawn=True, args=("-c", "raise SystemExit(2)"))
    out = io.StringIO()
    assert launcher.Launcher([misconfigured, other], out=out, grace_s=2.0).wait_started() == 1
    assert "restarting" not in out.getvalue()  # a configuration error is not a crash


@pytest.mark.parametrize("profile", ["stack_axis", "scale_axis"])
def test_robot_real_has_its_own_defaults_and_refuses_the_oracle_and_no_cameras(profile):
    """`robot:=real` (and fr3_cell.launch.py, which sets it) starts no local policy server, sends
    pi0.5-DROID's cameras and runs the pi0.5 campaign by default; with no cameras, or serving the
    oracle (which reads the simulator's object poses), it is refused in one sentence. robot:=mock
    keeps the stand-in's oracle."""
    from indgen_core.errors import IndGenError

    p = graph.load_profile(profile)
    real = p.values({"sim": False, "robot": "real"})
    assert real["start_policy_server"] is False and real["cameras"] == "exterior_1,wrist"
    assert real["campaign"].endswith("_pi05.yaml") and real["privileged"] is False
    names = [n.name for n in p.resolve({"sim": False, "robot": "real"})]
    assert "policy_server" not in names and "fr3_stand_in" not in names
    with pytest.raises(IndGenError, match=r"^robot:=real needs cameras:="):
        p.resolve({"sim": False, "robot": "real", "cameras": ""})
    with pytest.raises(IndGenError, match=r"^robot:=real cannot serve droid_twin_oracle"):
        p.resolve({"sim": False, "robot": "real", "start_policy_server": True})
    mock = p.values({"sim": False, "robot": "mock"})
    assert mock["campaign"].endswith("_oracle.yaml") and mock["start_policy_server"] is True


@pytest.mark.parametrize("profile", ["stack_axis", "blockenv_axis"])
def test_a_blind_campaign_is_refused_a_policy_server_in_the_launch(profile, tmp_path):
    """The graph's own policy server prints its policy's name in the launch terminal and on its
    command line: a blind campaign's servers run away from the cell, so a launch that would start
    one for a blind campaign file is refused in one sentence; with start_policy_server:=false it
    resolves, and an unblinded campaign keeps its local server."""
    from indgen_core.errors import IndGenError

    campaign = tmp_path / "blind.yaml"
    body = {"name": "lab_session", "axis": "stack", "world": "blockenv", "policies": ["oracle", "random"],
            "trials_per_level": 2, "seed": 1, "blind": True}
    campaign.write_text(yaml.safe_dump(body))
    p = graph.load_profile(profile)
    with pytest.raises(IndGenError, match=r"^a blind campaign's policies are served away from the cell"):
        p.resolve({"campaign": str(campaign)})
    names = [n.name for n in p.resolve({"campaign": str(campaign), "start_policy_server": False})]
    assert "policy_server" not in names and "progression_manager" in names
    campaign.write_text(yaml.safe_dump({**body, "blind": False}))
    assert "policy_server" in [n.name for n in p.resolve({"campaign": str(campaign)})]
