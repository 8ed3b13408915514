"""`indgen bag view`: one page per trial, the trial a report's row or a failure reason points
at, to see what happened rather than read it: its outcome and reason, frames from a camera
spread over the episode, and the actions the policy answered, drawn per dimension against the
control step and listed in full.

What a page shows is what the bag holds: the attempt's own time range (its task setup to its
result) picks its frames and policy exchanges, as `indgen bag video` does. An action is the
first of each reply (a chunk's length is said beside it: a chunking policy executes the rest
without being asked). The page is plain HTML with the frames inline and the plot as SVG, so it
opens from file:// and moves with its folder; the results index links it from the campaign's
page of trials (the store records it as the trial's "view").
"""

from __future__ import annotations

import base64
import bisect
import html
import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from indgen_core import specs
from indgen_core.bags.reader import BagError
from indgen_core.bags.trials import POLICY_EXCHANGE, Attempt, Recording, deserialize, records
from indgen_core.bags.video import camera_topics, safe_file_name, to_rgb
from indgen_core.nodes import messages
from indgen_core.records import Outcome
from indgen_core.wire import codec

FRAMES = 8  # frames shown per trial, first and last included
KEPT = 64  # frames held while an attempt is read (halved, evenly, when exceeded)
THUMB_WIDTH = 240  # px
PLOT_W, PLOT_H = 720, 90  # px per action dimension
SLACK_NS = 2_000_000_000  # what the recorder takes of an attempt after its result
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


@dataclass
class TrialTrace:
    """What one attempt recorded that a person looks at."""

    attempt: Attempt
    frames: list[tuple[float, np.ndarray]] = field(default_factory=list)  # (s since the first, thumbnail)
    steps: list[int] = field(default_factory=list)  # the control step of each request
    actions: list[np.ndarray] = field(default_factory=list)  # the first action of each reply
    chunks: list[int] = field(default_factory=list)  # actions per reply
    names: tuple[str, ...] = ()
    camera: str = ""
    path: Path | None = None

    def add_frame(self, stamp_s: float, rgb: np.ndarray) -> None:
        if len(self.frames) >= KEPT:
            self.frames = self.frames[::2]
        self.frames.append((stamp_s, _thumbnail(rgb)))

    def shown_frames(self) -> list[tuple[float, np.ndarray]]:
        if len(self.frames) <= FRAMES:
            return self.frames
        at = np.linspace(0, len(self.frames) - 1, FRAMES).round().astype(int)
        return [self.frames[i] for i in at]


def _thumbnail(rgb: np.ndarray) -> np.ndarray:
    from PIL import Image

    h, w = rgb.shape[:2]
    if w <= THUMB_WIDTH:
        return np.ascontiguousarray(rgb)
    image = Image.fromarray(np.ascontiguousarray(rgb)).resize((THUMB_WIDTH, max(1, round(h * THUMB_WIDTH / w))))
    return np.asarray(image)


def collect(bag_readers, recording: Recording, attempts: list[Attempt], camera: str | None = None) -> list[TrialTrace]:
    """One pass over the policy exchanges and one over a camera (the first by name unless
    `camera`), each record given to the attempt of `attempts` it belongs to."""
    traces = sorted((TrialTrace(a) for a in attempts), key=lambda t: t.attempt.start_ns)
    starts = [t.attempt.start_ns for t in traces]
    every_start = sorted(a.start_ns for a in recording.attempts)
    ends = []  # each attempt's last receive time: SLACK_NS after its result, before the next start
    for t in traces:
        later = bisect.bisect_right(every_start, t.attempt.start_ns)
        next_start = every_start[later] - 1 if later < len(every_start) else 2**63
        ends.append(min((t.attempt.end_ns or t.attempt.start_ns) + SLACK_NS, next_start))

    def trace_at(log_time: int, trial_id: str | None = None) -> TrialTrace | None:
        """The attempt that started last before `log_time`, while it ran or up to SLACK_NS after
        its result (the recorder takes a tick's last exchange and frame after the result at
        times) but never once another attempt started; with `trial_id`, only an attempt at it."""
        i = bisect.bisect_right(starts, log_time) - 1
        if i < 0 or log_time > ends[i] or trial_id not in (None, traces[i].attempt.trial_id):
            return None
        return traces[i]

    names: dict[str, tuple[str, ...]] = {}
    for record in records(bag_readers, {POLICY_EXCHANGE}):
        msg = deserialize(record)
        trace = trace_at(record.log_time, msg.trial_id)
        if trace is None:
            continue
        try:
            reply = codec.decode_dict(bytes(msg.reply), what="a recorded reply")
            actions = np.asarray(reply["actions"], dtype=np.float64)
        except (codec.FrameError, KeyError, TypeError, ValueError):
            raise BagError(f"a recorded reply of {msg.trial_id} (step {msg.step}) has no numeric 'actions'") from None
        actions = actions.reshape(-1, actions.shape[-1]) if actions.ndim else actions.reshape(1, 1)
        if msg.spec not in names:
            names[msg.spec] = specs.action_names(msg.spec)
        trace.names = names[msg.spec]
        trace.steps.append(int(msg.step))
        trace.actions.append(actions[0])
        trace.chunks.append(actions.shape[0])
    cameras = camera_topics(bag_readers)
    if camera is not None and camera not in cameras:
        raise BagError(f"no camera {camera!r} in the bag; it has {', '.join(sorted(cameras)) or 'none'}")
    if cameras:
        camera = camera or sorted(cameras)[0]
        first: dict[int, int] = {}
        for record in records(bag_readers, {cameras[camera]}):
            trace = trace_at(record.log_time)
            if trace is None:
                continue
            msg = deserialize(record)
            stamp = messages.nanoseconds(msg.header.stamp)
            trace.camera = camera
            trace.add_frame((stamp - first.setdefault(id(trace), stamp)) / 1e9, to_rgb(msg))
    return traces


def _jpeg(rgb: np.ndarray) -> str:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="JPEG", quality=80)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _svg(trace: TrialTrace) -> str:
    """One small plot per action dimension, step on x: a polyline, its range written beside."""
    values = np.vstack(trace.actions)
    steps = np.asarray(trace.steps, dtype=float)
    x0, x1 = steps.min(), max(steps.max(), steps.min() + 1)
    parts = []
    for d in range(values.shape[1]):
        name = trace.names[d] if d < len(trace.names) else f"a{d}"
        col = values[:, d]
        finite = col[np.isfinite(col)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        span = hi - lo or 1.0
        xs = 60 + (steps - x0) / (x1 - x0) * (PLOT_W - 70)
        ys = PLOT_H - 8 - (np.nan_to_num(col, nan=lo) - lo) / span * (PLOT_H - 16)
        points = " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys, strict=True))
        colour = COLOURS[d % len(COLOURS)]
        parts.append(
            f"<svg width='{PLOT_W}' height='{PLOT_H}' role='img' aria-label='{html.escape(name)} per step'>"
            f"<rect x='60' y='4' width='{PLOT_W - 70}' height='{PLOT_H - 8}' fill='#fafafa' stroke='#ddd'/>"
            f"<text x='2' y='16' font-size='12'>{html.escape(name)}</text>"
            f"<text x='2' y='32' font-size='10' fill='#666'>{hi:.3g}</text>"
            f"<text x='2' y='{PLOT_H - 8}' font-size='10' fill='#666'>{lo:.3g}</text>"
            f"<polyline fill='none' stroke='{colour}' stroke-width='1.5' points='{points}'/></svg>"
        )
    parts.append(f"<p class='note'>control step {x0:.0f} to {steps.max():.0f} on x</p>")
    return "".join(parts)


def _table(trace: TrialTrace) -> str:
    width = trace.actions[0].size
    names = [trace.names[d] if d < len(trace.names) else f"a{d}" for d in range(width)]
    head = "<tr><th>step</th><th>chunk</th>" + "".join(f"<th>{html.escape(n)}</th>" for n in names) + "</tr>"
    rows = (
        f"<tr><td>{s}</td><td>{c}</td>" + "".join(f"<td>{v:.4g}</td>" for v in a) + "</tr>"
        for s, c, a in zip(trace.steps, trace.chunks, trace.actions, strict=True)
    )
    return f"<table>{head}{''.join(rows)}</table>"


def page(trace: TrialTrace, back: str) -> str:
    a = trace.attempt
    result = a.result
    outcome = Outcome(result.outcome).word
    facts = [
        ("campaign", a.campaign_id),
        ("world / axis", f"{a.world} / {a.axis}"),
        ("level", a.level),
        ("outcome", outcome),
        ("reason", result.reason or "(none given)"),
        ("steps", result.steps),
        ("wall time", f"{result.wall_time_s:.1f} s"),
    ]
    facts += [("relabelled", f"{Outcome(r.outcome).word} ({r.reason})") for r in a.relabels]
    rows = "".join(f"<tr><th>{k}</th><td>{html.escape(str(v))}</td></tr>" for k, v in facts)
    if trace.frames:
        figures = "".join(
            f"<figure><img src='data:image/jpeg;base64,{_jpeg(rgb)}' alt='{html.escape(trace.camera)} at {t:.1f} s'>"
            f"<figcaption>{t:.1f} s</figcaption></figure>"
            for t, rgb in trace.shown_frames()
        )
        frames = f"<h2>Frames ({html.escape(trace.camera)})</h2><div class='strip'>{figures}</div>"
    else:
        frames = "<h2>Frames</h2><p class='note'>no camera frames in this trial's part of the bag.</p>"
    if trace.actions:
        chunk = max(trace.chunks)
        said = f"{len(trace.actions)} replies; the first action of each" + (
            f" (chunks of up to {chunk}: the rest were executed without asking)" if chunk > 1 else ""
        )
        actions = (
            f"<h2>Actions</h2><p class='note'>{said}</p>{_svg(trace)}"
            f"<details><summary>every reply's first action</summary>{_table(trace)}</details>"
        )
    else:
        actions = "<h2>Actions</h2><p class='note'>no policy exchange of this trial in the bag.</p>"
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(a.trial_id)}</title>"
        "<link rel='icon' href='data:,'><style>body{font-family:system-ui,sans-serif;margin:1em;color:#222;"
        "max-width:1240px}table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ccc;"
        "padding:2px 6px;text-align:left}th{background:#f3f3f3}.strip{display:flex;flex-wrap:wrap;gap:6px}"
        "figure{margin:0}img{min-width:160px;image-rendering:pixelated}figcaption,.note{color:#666;font-size:.85em}svg{display:block}</style></head><body>"
        f"<h1>{html.escape(a.trial_id)}</h1><p><a href='{html.escape(back)}'>every trial of the campaign</a></p>"
        f"<table>{rows}</table>{frames}{actions}</body></html>"
    )


def write_views(traces: list[TrialTrace], out_dir: Path, back: str) -> list[TrialTrace]:
    """Write each trace's page into `out_dir` (a file per trial id); `back` links the campaign's
    page of trials, relative to `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for trace in traces:
        trace.path = out_dir / f"{safe_file_name(trace.attempt.trial_id)}.html"
        tmp = trace.path.with_suffix(".tmp")
        tmp.write_text(page(trace, back))
        tmp.replace(trace.path)
    return traces
