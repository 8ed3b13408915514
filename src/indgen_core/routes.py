"""Which policy server answers which policy in a node graph.

The in-process executor makes each policy by name (a campaign's `endpoints` or a registered
local policy); a node graph has one policy node, which talks to the profile's `server_uri`
unless the progression manager routes a policy elsewhere. The routes go out latched on
/indgen/policy_routes as {"routes": {name: uri}, "blind": bool}, keyed by the name the trial
setups carry (a blind campaign's letter, so the policy node never needs the mapping). `blind`
tells the policy node to keep the servers' addresses and metadata off every topic and log a
person can read (policy_node.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from indgen_core import blind
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
    return {names.get(p, p): uri for p, uri in (record.config.get("endpoints") or {}).items()}


def routes_message(record: CampaignRecord) -> str:
    """The latched message of /indgen/policy_routes for this campaign."""
    return json.dumps({"routes": routes(record), "blind": bool(blind.labels(record))})


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
