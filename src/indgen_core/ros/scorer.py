"""scorer: commits every episode result to the results store and publishes per-level scores.

Subscribes /indgen/episode_result (reliable, deep queue: no result is dropped) and commits each
one atomically; a duplicate of an already committed trial is logged and ignored, and a
republished attempt is ignored quietly (the progression manager publishes a result again each
second until it is in the store: the store refuses an attempt whose signature it already has,
so a scorer restarted between two republishes counts it once too). After each
commit it publishes the LevelScore of that policy and level (the confidence sequence, verdict against
the break threshold) and, for a certify campaign, records the level's feasibility certificate.
When a campaign reports DONE on /indgen/campaign_status, it writes the campaign's report.

Only the campaign's own progression manager counts: a result or a DONE is used only when it
carries a valid signature made with the campaign's key from the store (auth.py), and a DONE
only when the store agrees the campaign is done. A forged result is dropped before it could
make the real one a "duplicate".

Parameters and endpoints: indgen_core/nodes/interfaces.py (docs/reference/nodes.md)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from rclpy.node import Node
from std_msgs.msg import String

from indgen_core import paths, topics
from indgen_core.campaign import blind
from indgen_core.campaign import planning as campaign_mod
from indgen_core.errors import IndGenError
from indgen_core.nodes import messages
from indgen_core.nodes.interfaces import SCORER_ENDPOINTS
from indgen_core.nodes.interfaces import ScorerParameters as Parameters
from indgen_core.report.analysis import summarize
from indgen_core.report.provenance import record_policy
from indgen_core.ros import convert
from indgen_core.ros.base import LATCHED, LEVEL_SCORES, RELIABLE, read_parameters, run_node, subscribe
from indgen_core.store import DuplicateResult, RepeatedAttempt, ResultsStore
from indgen_msgs.msg import CampaignStatus, EpisodeResult, LevelScore, PolicyStatus


class Scorer(Node):
    ENDPOINTS = SCORER_ENDPOINTS  # held to what it creates: ros.base.check_endpoints

    def __init__(self) -> None:
        super().__init__("scorer")
        self.p = read_parameters(self, Parameters)
        self.store = ResultsStore(self.p.db or None)
        self.score_pub = self.create_publisher(LevelScore, topics.LEVEL_SCORE, LEVEL_SCORES)
        subscribe(self, EpisodeResult, topics.EPISODE_RESULT, self._on_result, RELIABLE)
        subscribe(self, CampaignStatus, topics.CAMPAIGN_STATUS, self._on_status, LATCHED)
        # what each trial's policy said of itself (its server's metadata, as the policy node
        # passes it on): kept in the store once per campaign and policy, for the report's provenance
        subscribe(self, PolicyStatus, topics.POLICY_STATUS, self._on_policy_status, LATCHED)
        self._said: dict[str, dict] = {}  # trial id -> metadata, from a connected status
        self._identified: set[tuple[str, str]] = set()
        self._policy_of: dict[str, dict[str, str]] = {}  # campaign -> trial id -> policy, read once
        self.reported: set[str] = set()
        # the one writer of results answers each one: the progression manager starts the next
        # trial on "committed" or "repeated" (it never reads the store to find out)
        self.answer_pub = self.create_publisher(String, topics.RESULT_COMMITTED, RELIABLE)
        # the progression manager exits once the report is written (a shutdown would cut it off)
        self.written_pub = self.create_publisher(String, topics.REPORT_WRITTEN, LATCHED)
        self._reporting = threading.Lock()
        self.committed = 0
        self.refused = 0
        self.get_logger().info(f"committing results to {self.store.path}")

    def _genuine(self, msg, what: str) -> bool:
        if messages.signed_by(msg, self.store.campaign_key(msg.campaign_id)):
            return True
        self.refused += 1
        self.get_logger().warning(
            f"refused {what} for campaign {msg.campaign_id[:80]!r}: not signed by that "
            f"campaign's progression manager ({self.refused} refused so far)",
            throttle_duration_sec=5.0,
        )
        return False

    def _on_policy_status(self, msg: PolicyStatus) -> None:
        if not (msg.connected and msg.trial_id):
            return
        try:
            metadata = json.loads(msg.metadata_json or "{}")
        except ValueError:
            return
        if isinstance(metadata, dict):
            self._said[msg.trial_id] = metadata
            while len(self._said) > 64:  # only the latest trials matter
                self._said.pop(next(iter(self._said)))

    def _identify(self, campaign_id: str, trial_id: str) -> None:
        metadata = self._said.get(trial_id)
        if metadata is None:
            return
        if campaign_id not in self._policy_of:  # once per campaign, not a query per result
            self._policy_of[campaign_id] = {t.trial_id: t.policy for t in self.store.planned_trials(campaign_id)}
        policy = self._policy_of[campaign_id].get(trial_id)
        if policy is None or (campaign_id, policy) in self._identified:
            return
        self._identified.add((campaign_id, policy))
        record_policy(self.store, campaign_id, policy, metadata)

    def _on_result(self, msg: EpisodeResult) -> None:
        if not self._genuine(msg, f"a result for trial {msg.trial_id[:80]!r}"):
            return
        result = messages.result_from_msg(msg)
        if msg.relabel:
            self._relabel(msg, result)
            return
        try:
            final = self.store.commit_result(msg.campaign_id, result, attempt_key=msg.signature)
        except RepeatedAttempt:  # the same attempt again: its sender missed the first answer
            self._answer(msg, msg.signature, messages.REPEATED)
            return
        except DuplicateResult as exc:
            self.get_logger().warning(str(exc))
            self._answer(msg, msg.signature, messages.REFUSED, str(exc))
            return
        except IndGenError as exc:
            self.get_logger().error(f"result for {msg.trial_id} not committed: {exc}")
            self._answer(msg, msg.signature, messages.REFUSED, str(exc))
            return
        self._answer(msg, msg.signature, messages.COMMITTED)
        self._identify(msg.campaign_id, msg.trial_id)
        self.committed += 1
        record = self.store.campaign(msg.campaign_id)
        if final:
            campaign_mod.certify_after(self.store, record, result)
            self._publish_score(record, msg.policy, msg.level)

    def _relabel(self, msg, result) -> None:
        ref = str(result.details.get("relabel_id", ""))
        try:
            self.store.relabel(
                msg.campaign_id,
                result.trial_id,
                result.outcome,
                result.partial_score,
                str(result.details.get("operator", "")),
                str(result.details.get("note", "")),
                ref=ref,
            )
        except IndGenError as exc:
            self.get_logger().error(f"relabel of {msg.trial_id} not committed: {exc}")
            self._answer(msg, ref, messages.REFUSED, str(exc))
            return
        self._answer(msg, ref, messages.COMMITTED)
        record = self.store.campaign(msg.campaign_id)
        campaign_mod.certify_after(self.store, record)
        self._publish_score(record, msg.policy, msg.level)

    def _answer(self, msg, key: str, status: str, reason: str = "") -> None:
        text = messages.commit_answer(msg.campaign_id, msg.trial_id, key, status, reason)
        self.answer_pub.publish(String(data=text))

    def _publish_score(self, record, policy: str | None, level: int | None) -> None:
        """The live score of one policy (as the setups name it: a blind campaign's letter) at one
        level; every level of every policy with None. A blind campaign that still runs gets its
        counts only (blind.py)."""
        summary = summarize(self.store, record.id, live=True)  # looked at live: the confidence sequence
        hidden = blind.rates_hidden(self.store, record)
        for curve in summary.curves:
            if policy is not None and curve.policy != policy:
                continue
            for stat in curve.levels:
                if level is None or stat.level == level:
                    self.score_pub.publish(
                        convert.level_score_msg(
                            record.id, record.axis, curve.policy, stat, self.get_clock().now().to_msg(), hidden
                        )
                    )

    def _on_status(self, msg: CampaignStatus) -> None:
        if msg.state != CampaignStatus.STATE_DONE or msg.campaign_id in self.reported:
            return
        if not self._genuine(msg, "a DONE status"):
            return
        record = self.store.campaign(msg.campaign_id)
        if record.status != "done" or self.store.pending_trials(record.id):
            self.get_logger().warning(f"ignored DONE for {record.id}: the store says it is {record.status}")
            return
        self.reported.add(msg.campaign_id)
        if blind.labels(record):
            self._publish_score(record, None, None)  # done: the letters' rates may be seen now
        with self._reporting:  # close() waits for a report under way
            report, error = self._write_report(msg.campaign_id)
        self.written_pub.publish(String(data=json.dumps({"campaign_id": msg.campaign_id, "report": report,
                                                          "error": error})))  # fmt: skip

    def _write_report(self, campaign_id: str) -> tuple[str, str]:
        """(the report's path, or "" and why it failed; both "" when reports are not written)."""
        if not self.p.write_report:
            return "", ""
        from indgen_core.report import write_report
        from indgen_core.report.index_page import refresh_index

        base = Path(self.p.report_dir) if self.p.report_dir else paths.artifacts_dir() / "reports"
        try:
            files = write_report(self.store, [campaign_id], paths.inside(base, campaign_id))
        except Exception as exc:  # a report is never worth losing the node over
            self.get_logger().error(f"report for {campaign_id} failed: {exc}")
            return "", f"the report failed: {exc}"
        self.get_logger().info(f"campaign {campaign_id} report: {files.html}")
        index = refresh_index(self.store, base)
        if index is not None:
            self.get_logger().info(f"results index: {index}")
        return str(files.html), ""

    def close(self) -> None:
        """A report under way is finished before the node goes (up to a minute)."""
        if self._reporting.acquire(timeout=60.0):
            self._reporting.release()


def main() -> int:
    return run_node(Scorer)


if __name__ == "__main__":
    raise SystemExit(main())
