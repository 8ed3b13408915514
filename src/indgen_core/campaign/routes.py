"""Which policy server answers which policy in a node graph.

The in-process executor makes each policy by name (a campaign's `endpoints` or a registered
local policy); a node graph has one policy node, which talks to the profile's `server_uri`
unless the progression manager routes a policy elsewhere. The routes, {"routes": {name: uri},
"blind": bool} keyed by the name the trial setups carry (a blind campaign's letter, so the
policy node never needs the mapping), are the answer of a service (/indgen/get_policy_routes,
std_srvs/Trigger), not a topic: a server's address names the policy on a real cell, and what is
published is in every bag and `ros2 topic echo`. The latched topic /indgen/policy_routes says
only that routes are there to fetch: {"serial": n, "blind": bool}, a new serial when they
change (a restarted progression manager). `blind` tells the policy node to keep the servers'
addresses and metadata off every topic and log a person can read (policy_node.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from indgen_core.campaign import blind
from indgen_core.store import CampaignRecord


@dataclass(frozen=True)
class PolicyRoutes:
    """What the policy node reads off /indgen/policy_routes."""

    routes: dict[str, str] = field(default_factory=dict)
    blind: bool = False


def routes(record: CampaignRecord) -> dict[str, str]:
    """The policy server of each policy with an `endpoints` entry, keyed by the name the graph's
    setups carry (a blind campaign's letter): what the progression manager tells the policy node."""
    names = blind.labels(record)
    return {names.get(p, p): uri for p, uri in record.config.endpoints.items()}


def routes_message(record: CampaignRecord) -> str:
    """The answer of /indgen/get_policy_routes for this campaign."""
    return json.dumps({"routes": routes(record), "blind": bool(blind.labels(record))})


@dataclass(frozen=True)
class RoutesNotice:
    """What /indgen/policy_routes says: routes are there to fetch (serial), and whether the
    campaign is blind."""

    serial: int
    blind: bool


def notice_message(record: CampaignRecord, serial: int) -> str:
    return json.dumps({"serial": serial, "blind": bool(blind.labels(record))})


def parse_notice(text: str) -> RoutesNotice:
    """The notice as the policy node reads it; anything else is refused whole (a ValueError)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise ValueError("the policy routes notice is not JSON") from None
    if (
        not isinstance(data, dict)
        or set(data) != {"serial", "blind"}
        or not isinstance(data["blind"], bool)
        or not isinstance(data["serial"], int)
        or isinstance(data["serial"], bool)
    ):
        raise ValueError('the policy routes notice must be a JSON object {"serial": N, "blind": true or false}')
    return RoutesNotice(data["serial"], data["blind"])


def parse_routes(text: str) -> PolicyRoutes:
    """The routes as the policy node reads them off the topic: {"routes": a JSON object of short
    names to ws:// or wss:// URIs, "blind": a boolean}; anything else is refused whole (a
    ValueError with one sentence), so a garbled message can never point the node at an
    arbitrary server."""
    from urllib.parse import urlsplit

    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        raise ValueError("the policy routes are not JSON") from None
    if not isinstance(message, dict) or set(message) != {"routes", "blind"} or not isinstance(message["blind"], bool):
        raise ValueError('the policy routes must be a JSON object {"routes": {...}, "blind": true or false}')
    data = message["routes"]
    if not isinstance(data, dict) or len(data) > 64:
        raise ValueError("the policy routes must be a JSON object of at most 64 policies")
    out = {}
    for name, uri in data.items():
        if not isinstance(uri, str) or len(name) > 128 or len(uri) > 512:
            raise ValueError("each policy route maps a short name to a URI string")
        try:
            parts = urlsplit(uri)
            ok = parts.scheme in ("ws", "wss") and bool(parts.hostname) and parts.port is not None
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"policy route {name[:40]!r} is not a ws:// or wss:// URI with a host and port")
        out[name] = uri
    return PolicyRoutes(out, message["blind"])
