#!/usr/bin/python3
"""The demo's report: the summary table and kanna-demo.html (inline SVG
charts, no script, no network) of the stories examples/demo/demo.py played.

Everything is computed from what the demo recorded in each story's
directory, never estimated:
  k8s-status.json  kanna-sim's Kubernetes-side /_sim/status at the end (the
                   timeline of pods, nodes and NodeClaims);
  aws-status.json  its AWS-side /_sim/status (instances with launch and
                   terminate times, price per hour and cost accrued);
  events.json      `kubectl get events -o json` (DisruptionTerminating
                   "Disrupting NodeClaim: <reason>", the reaper's);
  kanna.log        kanna-init's and the daemons' log (JSON lines): the
                   reaper's "disrupting nodeclaim(s) via ..." decisions;
  story.json       what the demo did and when (its kubectl scale steps).
Usage: report.py OUT_DIR STORY_DIR... (writes OUT_DIR/kanna-demo.html and
prints the summary); demo.py imports it.
"""
import html
import json
import math
import os
import re
import sys
from datetime import datetime, timezone

# Karpenter's disruption reasons (kubernetes-sigs/karpenter
# pkg/apis/v1/nodepool.go: DisruptionReason Underutilized, Empty, Drifted;
# Expired from expiration) and a colour for each in the charts.
REASON_COLOURS = {
    "Empty": "#7f7f7f",
    "Underutilized": "#6a3d9a",
    "Expired": "#e6550d",
    "Drifted": "#1b9e77",
    "Interrupted": "#d62728",
}
TYPE_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                "#e377c2", "#17becf", "#bcbd22", "#393b79", "#637939", "#843c39"]

DECISION = re.compile(r"^disrupting nodeclaim(?:\(s\) via | (\S+) \((\w+)\): )")


def parse_time(s):
    """RFC 3339 (with or without milliseconds) → seconds since the epoch."""
    if not s:
        return None
    s = s.rstrip("Z")
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if "." in s else "%Y-%m-%dT%H:%M:%S"
    return datetime.strptime(s, fmt).replace(tzinfo=timezone.utc).timestamp()


def load_json(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return default


def read_log(path):
    """The JSON log lines (kanna-init's and the daemons'), in order."""
    lines = []
    try:
        with open(path, errors="replace") as f:
            for raw in f:
                try:
                    o = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(o, dict) and "message" in o:
                    lines.append(o)
    except FileNotFoundError:
        pass
    return lines


def decisions_of(log):
    """The reaper's disruption decisions: (time, reason, nodeclaim, text),
    one per NodeClaim and reason, at its first line: "disrupting
    nodeclaim(s) via delete|replace, ..." (Karpenter's "disrupting node(s)
    via ...") or, for an expired node whose pods need a place first,
    "disrupting nodeclaim NAME (Expired): N pod(s) need a place first"."""
    out, seen = [], {}
    for o in log:
        if o.get("logger") != "kanna-reaper":
            continue
        m = DECISION.match(o["message"])
        if not m:
            continue
        claim = o.get("nodeclaim") or m.group(1) or "?"
        reason = o.get("reason") or m.group(2) or "?"
        key = (claim, reason)
        if key in seen:
            d = out[seen[key]]
            if " via " in o["message"] and " via " not in d["text"]:
                d["text"] = o["message"]
            continue
        seen[key] = len(out)
        out.append({"t": parse_time(o["time"]), "reason": reason, "nodeclaim": claim,
                    "text": o["message"]})
    return out


def percentile(values, p):
    """Nearest-rank percentile of a non-empty list."""
    v = sorted(values)
    return v[max(0, math.ceil(p / 100.0 * len(v)) - 1)]


def analyse(story_dir):
    """One story's numbers and series, from its recordings."""
    story = load_json(os.path.join(story_dir, "story.json"), {})
    k8s = load_json(os.path.join(story_dir, "k8s-status.json"), {})
    aws = load_json(os.path.join(story_dir, "aws-status.json"), {})
    events = load_json(os.path.join(story_dir, "events.json"), {}).get("items", [])
    log = read_log(os.path.join(story_dir, "kanna.log"))
    timeline = [(parse_time(e["time"]), e["event"], e["detail"]) for e in k8s.get("timeline", [])]
    timeline.sort(key=lambda e: e[0])
    instances = aws.get("instances", [])

    start = story.get("started") or (timeline[0][0] if timeline else 0)
    end = story.get("ended") or parse_time(k8s.get("time")) or start

    # Pods: created → bound, and the pending count over time.
    created, bound_at, waits, pending, series_pending = {}, {}, [], 0, [(start, 0)]
    for t, ev, detail in timeline:
        name = detail.split(" ")[0]
        if ev == "pod-created":
            created[name] = t
            pending += 1
        elif ev == "pod-bound":
            bound_at[name] = t
            if name in created:
                waits.append(t - created[name])
                pending -= 1
        elif ev == "pod-deleted":
            if name in created and name not in bound_at:
                pending -= 1
            created.pop(name, None)
        else:
            continue
        series_pending.append((t, pending))

    # Nodes by instance type: registered → deleted.
    node_type, series_nodes, live = {}, [(start, {})], {}
    for t, ev, detail in timeline:
        f = detail.split(" ")
        if ev == "node-registered":
            node_type[f[0]] = f[1] if len(f) > 1 else "?"
            live[f[0]] = node_type[f[0]]
        elif ev == "node-deleted" and f[0] in live:
            del live[f[0]]
        else:
            continue
        counts = {}
        for ty in live.values():
            counts[ty] = counts.get(ty, 0) + 1
        series_nodes.append((t, counts))

    # Cost per hour: each instance's price from its launch to its termination.
    changes = []
    for i in instances:
        changes.append((parse_time(i["launchTime"]), i["pricePerHour"]))
        if i.get("terminateTime"):
            changes.append((parse_time(i["terminateTime"]), -i["pricePerHour"]))
    changes.sort()
    series_cost, rate = [(start, 0.0)], 0.0
    for t, d in changes:
        rate += d
        series_cost.append((t, max(0.0, round(rate, 6))))

    # Terminations by reason: the reaper's DisruptionTerminating Event on
    # each NodeClaim ("Disrupting NodeClaim: Expired"), for each instance the
    # sim saw terminated.
    event_reason = {}
    for e in events:
        if e.get("reason") == "DisruptionTerminating":
            m = re.match(r"Disrupting NodeClaim: (\w+)", e.get("message", ""))
            if m:
                event_reason[e["involvedObject"].get("name")] = m.group(1)
    decisions = decisions_of(log)
    log_reason = {d["nodeclaim"]: d["reason"] for d in decisions}
    terminations = {}
    for i in instances:
        if not i.get("terminateTime"):
            continue
        claim = (i.get("tags") or {}).get("karpenter.sh/nodeclaim", "")
        reason = event_reason.get(claim) or log_reason.get(claim) or "no disruption recorded"
        terminations[reason] = terminations.get(reason, 0) + 1

    node_seconds = sum((parse_time(i.get("terminateTime")) or end) - parse_time(i["launchTime"])
                       for i in instances)
    key_lines = [o for o in log if KEY_LINE.match(o["message"]) or o.get("level") in ("warn", "error")]
    return {
        "name": story.get("name", os.path.basename(story_dir)),
        "title": story.get("title", os.path.basename(story_dir)),
        "settings": story.get("settings", {}),
        "steps": story.get("steps", []),
        "start": start,
        "end": end,
        "launches": len(instances),
        "terminations": terminations,
        "pods_bound": len(bound_at),
        "wait_mean": sum(waits) / len(waits) if waits else None,
        "wait_p99": percentile(waits, 99) if waits else None,
        "node_hours": node_seconds / 3600.0,
        "cost": sum(i.get("costAccrued", 0.0) for i in instances),
        "decisions": decisions,
        "series_pending": series_pending,
        "series_nodes": series_nodes,
        "series_cost": series_cost,
        "types": sorted(set(node_type.values())),
        "key_lines": key_lines,
    }


# The log lines worth a user's eye, in Karpenter's wording
# (KARPENTER-VOCABULARY.md): the demo shows them live and the report lists them.
KEY_LINE = re.compile(r"^(found \d+ provisionable pod|computed new nodeclaim|launched nodeclaim|"
                      r"bound \d+ pod|initialized nodeclaim|disrupting nodeclaim|"
                      r"launching replacement nodeclaim|deleted nodeclaim)")


def fmt_secs(v):
    return "-" if v is None else "%.1f s" % v


def summary_rows(stories):
    """(label, [value per story]) rows of the summary table."""
    reasons = sorted({r for s in stories for r in s["terminations"]})
    rows = [("story length", ["%.0f s" % (s["end"] - s["start"]) for s in stories]),
            ("instances launched", [str(s["launches"]) for s in stories])]
    for r in reasons:
        rows.append(("terminated: %s" % r, [str(s["terminations"].get(r, 0)) for s in stories]))
    rows += [("pods bound", [str(s["pods_bound"]) for s in stories]),
             ("pending → bound, mean", [fmt_secs(s["wait_mean"]) for s in stories]),
             ("pending → bound, p99", [fmt_secs(s["wait_p99"]) for s in stories]),
             ("node-hours", ["%.4f" % s["node_hours"] for s in stories]),
             ("cost (sim, at launch prices)", ["$%.5f" % s["cost"] for s in stories])]
    return rows


def summary_text(stories):
    rows = summary_rows(stories)
    w0 = max(len(r[0]) for r in rows)
    widths = [max(len(s["name"]), *(len(r[1][k]) for r in rows)) for k, s in enumerate(stories)]
    out = ["  %-*s  %s" % (w0, "", "  ".join("%*s" % (w, s["name"]) for w, s in zip(widths, stories)))]
    for label, vals in rows:
        out.append("  %-*s  %s" % (w0, label, "  ".join("%*s" % (w, v) for w, v in zip(widths, vals))))
    return "\n".join(out)


# ---- SVG -------------------------------------------------------------------

W, H, ML, MR, MT, MB = 920, 210, 60, 20, 26, 30


def nice_ceiling(v):
    if v <= 0:
        return 1
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * e:
            return m * e
    return 10 * e


def axes(s, ymax, fmt_y, title):
    span = max(1.0, s["end"] - s["start"])
    x = lambda t: ML + (t - s["start"]) / span * (W - ML - MR)
    y = lambda v: H - MB - v / ymax * (H - MT - MB)
    out = ['<text x="%d" y="16" class="title">%s</text>' % (ML, html.escape(title))]
    for k in range(5):
        v = ymax * k / 4
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" class="grid"/>' % (ML, W - MR, y(v), y(v)))
        out.append('<text x="%d" y="%.1f" class="tick" text-anchor="end">%s</text>' % (ML - 6, y(v) + 4, fmt_y(v)))
    step = next(d for d in (5, 10, 15, 20, 30, 60, 120, 300) if span / d <= 12)
    t = 0
    while t <= span:
        out.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" class="axis"/>' % (x(s["start"] + t), x(s["start"] + t), H - MB, H - MB + 4))
        out.append('<text x="%.1f" y="%d" class="tick" text-anchor="middle">%ds</text>' % (x(s["start"] + t), H - MB + 16, t))
        t += step
    out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" class="axis"/>' % (ML, W - MR, H - MB, H - MB))
    return x, y, out


def markers(s, x, labelled):
    """Each disruption decision as a dashed vertical line in its reason's
    colour (labelled on the first chart), and each scale step of the demo as
    a tick under the time axis."""
    out = []
    for d in s["decisions"]:
        c = REASON_COLOURS.get(d["reason"], "#d62728")
        out.append('<line class="decision" data-reason="%s" x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s">'
                   '<title>%s</title></line>' % (html.escape(d["reason"]), x(d["t"]), x(d["t"]), MT, H - MB, c,
                                                 html.escape("+%.0fs %s: %s" % (d["t"] - s["start"], d["reason"], d["text"]))))
        if labelled:
            out.append('<text class="decision-label" x="%.1f" y="%d" fill="%s">%s</text>' % (x(d["t"]) + 3, MT + 10, c, html.escape(d["reason"])))
    for st in s["steps"]:
        out.append('<path class="step" d="M%.1f %d l-4 7 h8 z"><title>%s</title></path>' % (
            x(st["t"]), H - MB - 7, html.escape(st["label"])))
    return out


def step_path(points, x, y, end):
    """A step function's outline (value held until the next point)."""
    d, prev = [], None
    for t, v in points:
        if prev is None:
            d.append("M%.1f %.1f" % (x(t), y(v)))
        else:
            d.append("H%.1f V%.1f" % (x(t), y(v)))
        prev = v
    d.append("H%.1f" % x(end))
    return " ".join(d)


def line_chart(s, cid, title, points, colour, fmt_y, labelled=False):
    ymax = nice_ceiling(max(v for _, v in points) * 1.1 if points else 1)
    x, y, out = axes(s, ymax, fmt_y, title)
    line = step_path(points, x, y, s["end"])
    out.append('<path class="series area" d="%s V%.1f H%.1f Z" fill="%s" fill-opacity="0.18"/>' % (line, y(0), x(points[0][0]), colour))
    out.append('<path class="series line" d="%s" fill="none" stroke="%s" stroke-width="2"/>' % (line, colour))
    out += markers(s, x, labelled)
    return svg(cid, out)


def nodes_chart(s, cid, labelled=True):
    pts = s["series_nodes"]
    ymax = nice_ceiling(max([sum(c.values()) for _, c in pts] + [1]))
    x, y, out = axes(s, ymax, lambda v: "%g" % v, "Nodes by instance type")
    colour = {ty: TYPE_COLOURS[k % len(TYPE_COLOURS)] for k, ty in enumerate(s["types"])}
    for k, (t, counts) in enumerate(pts):
        t_next = pts[k + 1][0] if k + 1 < len(pts) else s["end"]
        base = 0
        for ty in s["types"]:
            n = counts.get(ty, 0)
            if n and t_next > t:
                out.append('<rect class="series" data-type="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s">'
                           '<title>%s ×%d</title></rect>' % (html.escape(ty), x(t), y(base + n), max(0.5, x(t_next) - x(t)),
                                                            y(base) - y(base + n), colour[ty], html.escape(ty), n))
            base += n
    out += markers(s, x, labelled)
    legend = "".join('<span class="key"><i style="background:%s"></i>%s</span>' % (colour[ty], html.escape(ty)) for ty in s["types"])
    return svg(cid, out) + '<div class="legend">%s</div>' % legend


def svg(cid, body):
    return ('<svg id="%s" class="chart" viewBox="0 0 %d %d" width="%d" height="%d" '
            'xmlns="http://www.w3.org/2000/svg" role="img">%s</svg>' % (cid, W, H, W, H, "".join(body)))


CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px auto; max-width: 960px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 36px; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 8px 0 16px; }
td, th { padding: 3px 12px; border-bottom: 1px solid #eee; text-align: right; }
td:first-child, th:first-child { text-align: left; }
svg.chart { display: block; margin: 10px 0 2px; background: #fff; }
svg .title { font-weight: 600; font-size: 13px; }
svg .tick { font-size: 11px; fill: #555; }
svg .grid { stroke: #e6e6e6; } svg .axis { stroke: #444; }
svg .decision { stroke-width: 1.5; stroke-dasharray: 4 3; }
svg .decision-label { font-size: 10px; }
svg .step { fill: #444; }
svg rect.series { shape-rendering: crispEdges; }
.legend { font-size: 12px; margin-left: 60px; }
.key { margin-right: 14px; white-space: nowrap; }
.key i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
.log { font: 12px/1.35 ui-monospace, monospace; white-space: pre-wrap; background: #f7f7f7; padding: 8px; }
.note { color: #555; font-size: 13px; }
"""


def story_html(s):
    rows = "".join("<tr><td>+%.0fs</td><td style=\"color:%s\">%s</td><td style=\"text-align:left\">%s</td></tr>" % (
        d["t"] - s["start"], REASON_COLOURS.get(d["reason"], "#d62728"), html.escape(d["reason"]), html.escape(d["text"]))
        for d in s["decisions"]) or "<tr><td colspan=3>none</td></tr>"
    settings = ", ".join("%s %s" % kv for kv in s["settings"].items())
    steps = ", ".join("+%.0fs %s" % (st["t"] - s["start"], st["label"]) for st in s["steps"])
    log = "\n".join("%s %-15s %s" % (o["time"][11:19], o.get("logger", ""), o["message"]) for o in s["key_lines"])
    return """
<h2 id="story-{name}">{title}</h2>
<p class="note">Settings: {settings}. Steps (▲ on the time axis): {steps}.
Dashed lines: the reaper's disruption decisions, in the colour of their reason.</p>
{nodes}
{pending}
{cost}
<h3>Disruption decisions</h3>
<table><tr><th>when</th><th>reason</th><th style="text-align:left">kanna-reaper</th></tr>{rows}</table>
<h3>Key log lines</h3>
<div class="log">{log}</div>
""".format(name=html.escape(s["name"]), title=html.escape(s["title"]), settings=html.escape(settings),
           steps=html.escape(steps), rows=rows, log=html.escape(log),
           nodes=nodes_chart(s, "chart-%s-nodes" % s["name"]),
           pending=line_chart(s, "chart-%s-pending" % s["name"], "Pending pods", s["series_pending"], "#d62728",
                              lambda v: "%g" % v),
           cost=line_chart(s, "chart-%s-cost" % s["name"], "Cost per hour (USD)", s["series_cost"], "#2ca02c",
                           lambda v: "$%.3f" % v))


def report_html(stories):
    rows = summary_rows(stories)
    table = "<tr><th></th>%s</tr>" % "".join("<th>%s</th>" % html.escape(s["name"]) for s in stories)
    table += "".join("<tr><td>%s</td>%s</tr>" % (html.escape(label), "".join("<td>%s</td>" % html.escape(v) for v in vals))
                     for label, vals in rows)
    when = datetime.fromtimestamp(stories[0]["start"], timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if stories else ""
    return """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>kanna demo</title><style>{css}</style></head>
<body>
<h1>kanna demo: seed scenario S1 on kanna-sim</h1>
<p class="note">{when}. kanna-watcher, kanna-scheduler, kanna-launcher and kanna-reaper under kanna-init, against
kanna-sim (Kubernetes API and EC2 on loopback). A deployment of 500m CPU / 512Mi pods scaled
0 → 5 → 20 → 10 → 5 → 0. Every number and curve comes from what kanna-sim recorded (its timelines,
instances and prices), the Events and the daemons' logs.</p>
<table>{table}</table>
{stories}
</body></html>
""".format(css=CSS, when=when, table=table, stories="".join(story_html(s) for s in stories))


def write_report(out_dir, story_dirs):
    stories = [analyse(d) for d in story_dirs]
    path = os.path.join(out_dir, "kanna-demo.html")
    with open(path + ".tmp", "w") as f:
        f.write(report_html(stories))
    os.replace(path + ".tmp", path)
    return stories, path


def main(argv):
    if len(argv) < 3:
        sys.stderr.write("usage: report.py OUT_DIR STORY_DIR...\n")
        return 2
    stories, path = write_report(argv[1], argv[2:])
    print(summary_text(stories))
    print("report: %s" % os.path.abspath(path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
