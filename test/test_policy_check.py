"""`indgen policy check`: one real request of a world, the reply judged before any rollout;
and every spec's declared fields (the own-policy guide's tables) held true to the request
its world really sends."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest

from helpers import servers
from helpers.openpi_server import OpenpiStyleServer
from indgen_core.specs import policy_check

WORLDS = [
    ("blockenv", {}),
    ("droid_twin", {"builtin": True}),
    pytest.param("libero", {"cameras": True}, marks=pytest.mark.slow),
    pytest.param("robocasa", {"cameras": True}, marks=pytest.mark.slow),
]


def _libero_or_skip(world: str) -> None:
    if world == "libero":
        pytest.importorskip("libero", reason="LIBERO is installed by `make libero` (and `make test`)")
    if world == "robocasa":
        from indgen_sim.robocasa.world import env_root

        if not (env_root() / "bin" / "python").exists():
            pytest.skip(f"RoboCasa's environment is not set up at {env_root()} (make robocasa, and make test)")


def indgen(*args, env=None):
    return subprocess.run([sys.executable, "-m", "indgen_core.cli", *args], capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.mark.parametrize(("world", "options"), WORLDS)
def test_every_worlds_real_request_is_what_its_spec_declares(world, options):
    """The tables of docs/guides/own-policy.md come from `Spec.request_fields`: here each
    world's real first request (privileged keys included) is held to them, key by key."""
    _libero_or_skip(world)
    setup = policy_check.sample_setup(world, None, 1, seed=3)
    spec, request = policy_check.first_request(world, setup, privileged=True, options=options)
    assert policy_check.field_problems(spec.request_fields, request, "request") == []
    assert any(k.startswith("privileged/") for k in request) or world == "blockenv"
    _, plain = policy_check.first_request(world, setup, privileged=False, options=options)
    assert not any(k.startswith("privileged/") for k in plain)


def test_a_request_that_strays_from_its_declaration_is_named_key_by_key():
    from indgen_core.specs.droid import DroidSpec

    request = {"observation/joint_position": np.zeros(6), "observation/gripper_position": np.zeros(1, np.float32),
               "prompt": "x", "episode/seed": np.uint64(1), "episode/step": np.int64(0), "episode/id": "t",
               "observation/extra": 1}
    assert policy_check.field_problems(DroidSpec.request_fields, request, "request") == [
        "the request's 'observation/joint_position' has shape (6,), the spec says (7,)",
        "the request's 'observation/gripper_position' is float32, the spec says float64",
        "the request carries 'observation/extra', which the spec does not declare",
    ]


BUILTIN = [
    ("blockenv_oracle", "blockenv", {}),
    ("droid_twin_oracle", "droid_twin", {"builtin": True}),
    pytest.param("libero_oracle", "libero", {}, marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("policy", "world", "options"), BUILTIN)
def test_the_built_in_policies_pass_against_their_worlds_served_as_a_user_serves_theirs(policy, world, options):
    _libero_or_skip(world)
    import json

    port = servers.free_port()
    server = servers.start_server(policy, port)
    try:
        proc = indgen("policy", "check", f"ws://127.0.0.1:{port}", "--world", world, "--privileged",
                      "--world-options", json.dumps(options))
    finally:
        servers.stop(server)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1].startswith("ok: "), proc.stdout
    assert f'"policy": "{policy}"' in proc.stdout  # the server's metadata, shown


class Answers:
    """A policy that answers what it is given to answer, slowly if asked."""

    def __init__(self, reply, delay: float = 0.0):
        self.reply, self.delay = reply, delay

    def infer(self, obs):
        time.sleep(self.delay)
        return self.reply


WRONG = [
    ({"action": np.zeros((15, 8))}, 0.0, "policy reply has no 'actions' (keys: ['action', "),
    ({"actions": np.zeros((15, 7))}, 0.0, "policy reply 'actions' has 7 values per action, expected 8"),
    ({"actions": np.full((15, 8), np.nan)}, 0.0, "policy reply 'actions' contains NaN or infinite values"),
    ({"actions": np.zeros((15, 8))}, 3.0, "did not answer within 1 s"),
]


@pytest.mark.parametrize(("reply", "delay", "sentence"), WRONG, ids=["wrong key", "wrong shape", "nan", "slow"])
def test_a_server_that_answers_wrongly_gets_one_sentence_each(reply, delay, sentence):
    """Against a stand-in for openpi's own server (its protocol, from its source): a wrong key,
    a wrong shape, NaN, too slow. One sentence each, exit 1, no traceback."""
    with OpenpiStyleServer(Answers(reply, delay), metadata={"policy": "mine"}) as fake:
        proc = indgen("policy", "check", f"ws://127.0.0.1:{fake.port}", "--world", "droid_twin", "--timeout", "1",
                      "--world-options", '{"builtin": true}')
    problems = [line for line in proc.stdout.splitlines() if line.startswith("problem: ")]
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert len(problems) == 1 and sentence in problems[0], problems


def test_nothing_listening_and_an_unknown_world_are_one_sentence():
    port = servers.free_port()
    proc = indgen("policy", "check", f"ws://127.0.0.1:{port}", "--world", "blockenv", "--timeout", "2")
    assert proc.returncode == 1 and "cannot reach the policy server" in proc.stdout, proc.stdout + proc.stderr
    proc = indgen("policy", "check", "blockenv_oracle", "--world", "blokenv")
    assert proc.returncode == 2 and proc.stderr.strip() == "indgen: error: unknown world 'blokenv'; did you mean " \
                                                           "'blockenv'?", proc.stderr
