#!/usr/bin/python3
"""./quickstart demo: seed scenario S1 (SCENARIOS.md) played on kanna-sim by
the four daemons under kanna-init, twice: with the blog's karpenter.sh/
v1alpha5 Provisioner (scale-up, expiry with replacement, emptiness), then
with a karpenter.sh/v1 NodePool that consolidates (WhenEmptyOrUnderutilized).
Each story starts its own kanna-sim and kanna-init (a generated kanna.yaml,
a runtime directory of its own), scales the deployment inflate 0 → 5 → 20
→ 10 → 5 → 0 with the ttls shortened, shows a live view (elapsed time,
pending pods, nodes, $/hour, the last disruption decision) and the daemons'
key log lines, and stops everything it started. At the end: the summary
table and kanna-demo.html (report.py), whose path it prints.

Usage: demo.py BUILDDIR [--out DIR] [--timing demo|short] [--stories LIST]
Uses only what ./quickstart build makes (BUILDDIR's kanna-sim, kanna-init
and daemons), kubectl and python3's standard library. Exits 0 when every
story ran to its end and every daemon exited 0.
"""
import argparse
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DAEMONS = ("watcher", "scheduler", "launcher", "reaper")

# The two stories and their timings: "demo" fits each story in under 3
# minutes with room to watch; "short" (the test's, tests/e2e/demo.sh) is the
# same story with the ttls cut further. consolidation-validation-delay is
# the reaper's (Karpenter's 15s consolidationTTL), shortened alike.
STORIES = {
    "provisioner": {
        "title": "S1 with a karpenter.sh/v1alpha5 Provisioner (ttlSecondsUntilExpired, ttlSecondsAfterEmpty)",
        "manifest": "s1-provisioner.yaml",
        "consolidates": False,
        "timing": {"demo": {"ttlSecondsAfterEmpty": "15", "ttlSecondsUntilExpired": "60"},
                   "short": {"ttlSecondsAfterEmpty": "5", "ttlSecondsUntilExpired": "30"}},
    },
    "nodepool": {
        "title": "S1 with a karpenter.sh/v1 NodePool (consolidationPolicy WhenEmptyOrUnderutilized)",
        "manifest": "s1-nodepool.yaml",
        "consolidates": True,
        "timing": {"demo": {"consolidateAfter": "5s"}, "short": {"consolidateAfter": "3s"}},
    },
}
TIMING = {"demo": {"dwell": 5.0, "validation": "5s"}, "short": {"dwell": 1.0, "validation": "2s"}}


class DemoError(Exception):
    pass


def shown(path):
    """A path as the user can type it: relative under the current directory."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def seconds(v):
    """"75s", "60" → 75.0, 60.0 (the manifests' durations)."""
    m = re.match(r"^(\d+(?:\.\d+)?)(s|m)?$", str(v))
    if not m:
        raise DemoError("not a duration: %r" % v)
    return float(m.group(1)) * (60 if m.group(2) == "m" else 1)


# ---- the live view -----------------------------------------------------------

class View:
    """Scrolling lines (steps, key log lines) above a status block that is
    redrawn in place on a terminal; elsewhere (a pipe, a test's log) the
    status is printed as a line whenever it changes."""

    def __init__(self):
        self.tty = sys.stdout.isatty() and os.environ.get("TERM", "dumb") != "dumb"
        self.sticky = []
        self.drawn = 0
        self.last_plain = None

    def _erase(self):
        if self.tty and self.drawn:
            sys.stdout.write("\x1b[%dA\r\x1b[J" % self.drawn)
            self.drawn = 0

    def _draw(self):
        if self.tty and self.sticky:
            width = max(40, shutil.get_terminal_size((100, 24)).columns - 1)
            for k, line in enumerate(self.sticky):
                if k == 0:  # the header in reverse video, across the terminal
                    sys.stdout.write("\x1b[7m%s\x1b[0m\n" % line[:width].ljust(width))
                else:
                    sys.stdout.write("%s\n" % line[:width])
            self.drawn = len(self.sticky)
        sys.stdout.flush()

    def line(self, text):
        self._erase()
        sys.stdout.write(text + "\n")
        self._draw()

    def status(self, lines, plain, plain_key):
        if self.tty:
            self._erase()
            self.sticky = lines
            self._draw()
        elif plain_key != self.last_plain:
            self.last_plain = plain_key
            sys.stdout.write("  | %s\n" % plain)
            sys.stdout.flush()

    def done(self):
        """The last status stays on the screen, as plain lines."""
        self._erase()
        if self.tty:
            for line in self.sticky:
                sys.stdout.write("  %s\n" % line)
        self.sticky = []
        sys.stdout.flush()


def bold(view, text):
    view.line(("\x1b[1m%s\x1b[0m" % text) if view.tty else text)


# ---- one cluster: kanna-sim and kanna-init with the four daemons --------------

class Cluster:
    def __init__(self, builddir, story_dir, settings, view):
        self.builddir = builddir
        self.dir = story_dir
        self.view = view
        self.work = tempfile.mkdtemp(prefix="kanna-demo-")  # short: Unix socket paths
        self.sim = self.init = None
        self.settings = settings
        self.log_path = os.path.join(story_dir, "kanna.log")
        self.log_offset = 0
        self.log_lines = []

    # kanna-sim ------------------------------------------------------------
    def start_sim(self):
        state = os.path.join(self.work, "state")
        with open(os.path.join(self.dir, "sim.log"), "w") as log:
            self.sim = subprocess.Popen([os.path.join(self.builddir, "sim", "kanna-sim"), "--state-dir", state],
                                        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.time() + 30
        while not os.path.exists(os.path.join(state, "ready")):
            if self.sim.poll() is not None or time.time() > deadline:
                raise DemoError("kanna-sim did not start (%s)" % os.path.join(self.dir, "sim.log"))
            time.sleep(0.1)
        self.env = dict(os.environ, KUBECONFIG=os.path.join(state, "kubeconfig"))
        with open(os.path.join(state, "aws.env")) as f:
            for m in re.finditer(r"^export (\w+)='([^']*)'$", f.read(), re.M):
                self.env[m.group(1)] = m.group(2)
        with open(self.env["KUBECONFIG"]) as f:
            self.api = json.load(f)["clusters"][0]["cluster"]["server"]
        with open(os.path.join(state, "token")) as f:
            self.token = f.read().strip()
        self.tls = ssl.create_default_context(cafile=os.path.join(state, "ca.crt"))
        self.view.line("  kanna-sim: Kubernetes API %s, AWS APIs %s (no cloud account)" % (
            self.api, self.env["AWS_ENDPOINT_URL"]))

    def k8s_status(self):
        req = urllib.request.Request(self.api + "/_sim/status", headers={"Authorization": "Bearer " + self.token})
        with urllib.request.urlopen(req, context=self.tls, timeout=10) as r:
            return json.load(r)

    def aws_status(self):
        with urllib.request.urlopen(self.env["AWS_ENDPOINT_URL"] + "/_sim/status", timeout=10) as r:
            return json.load(r)

    def kubectl(self, *args, stdin=None):
        r = subprocess.run(("kubectl",) + args, env=self.env, input=stdin, capture_output=True, text=True)
        if r.returncode != 0:
            raise DemoError("kubectl %s: %s" % (" ".join(args), r.stderr.strip()))
        return r.stdout

    # kanna-init -------------------------------------------------------------
    def start_init(self):
        bindir = os.path.join(self.work, "bin")
        os.mkdir(bindir)
        for d in DAEMONS:
            os.symlink(os.path.join(self.builddir, d, "kanna-" + d), os.path.join(bindir, "kanna-" + d))
        os.mkdir(os.path.join(self.work, "run"))
        config = os.path.join(self.dir, "kanna.yaml")
        with open(config, "w") as f:
            f.write("""# Generated by examples/demo/demo.py: kanna-init runs the four daemons
# against kanna-sim; one file for all of them (kanna.yaml(5)).
runtime-dir: {run}
metrics-port: 0
health-port: 0
log-format: json
init:
  daemons: [watcher, scheduler, launcher, reaper]
  daemon-dir: {bin}
  health-port: 0
  grace-period: 20s
watcher:
  leader-elect: false
  announce-interval: 500ms
scheduler:
  leader-elect: false
  batch-idle-duration: 500ms
launcher:
  leader-elect: false
  reconcile-period: 1s
reaper:
  leader-elect: false
  reconcile-period: 500ms
  consolidation-validation-delay: {validation}
  feature-gates: SpotToSpotConsolidation=true
""".format(run=os.path.join(self.work, "run"), bin=bindir, validation=self.settings["validation"]))
        with open(self.log_path, "w") as log:
            self.init = subprocess.Popen([os.path.join(self.builddir, "init", "kanna-init"), "--config=" + config],
                                         stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=self.env)
        self.view.line("  kanna-init: kanna-watcher, kanna-scheduler, kanna-launcher, kanna-reaper (config %s)" %
                       shown(config))
        deadline = time.time() + 60
        while not (self.logged("kanna-launcher", "taking launch plans") and
                   self.logged("kanna-reaper", "reaping for cluster")):
            if self.init.poll() is not None:
                raise DemoError("kanna-init exited with status %d (%s)" % (self.init.returncode, self.log_path))
            if time.time() > deadline:
                raise DemoError("the daemons were not ready within 60 s (%s)" % self.log_path)
            time.sleep(0.2)
            self.read_log()

    def read_log(self):
        """New JSON lines of kanna.log since the last call."""
        new = []
        try:
            with open(self.log_path, errors="replace") as f:
                f.seek(self.log_offset)
                chunk = f.read()
        except FileNotFoundError:
            return new
        end = chunk.rfind("\n") + 1
        self.log_offset += len(chunk[:end].encode())
        for raw in chunk[:end].splitlines():
            try:
                o = json.loads(raw)
            except ValueError:
                continue
            if isinstance(o, dict) and "message" in o:
                new.append(o)
        self.log_lines += new
        return new

    def logged(self, logger, text):
        return any(o.get("logger") == logger and text in o["message"] for o in self.log_lines)

    # stopping ---------------------------------------------------------------
    def stop(self):
        """SIGTERM to kanna-init (it stops the daemons), then to kanna-sim;
        whatever is still running after its grace is killed. Returns
        kanna-init's exit status."""
        rc = None
        for proc, grace in ((self.init, 40), (self.sim, 20)):
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.init is not None:
            rc = self.init.returncode
        shutil.rmtree(self.work, ignore_errors=True)
        return rc


# ---- one story -------------------------------------------------------------------

class Snapshot:
    """What kanna-sim says now, and what the live view and the waits need."""

    def __init__(self, k8s, aws):
        self.k8s, self.aws = k8s, aws
        pods = [p for p in k8s.get("pods", []) if p.get("name", "").startswith("inflate-")]
        self.pods = len(pods)
        self.bound = sum(1 for p in pods if p.get("node"))
        self.nodes = k8s.get("nodes", [])
        self.ready = all(n.get("ready") for n in self.nodes)
        live, self.last_change = {}, 0.0
        for e in k8s.get("timeline", []):
            name = e["detail"].split(" ")[0]
            if e["event"] == "nodeclaim-created":
                live[name] = True
            elif e["event"] == "nodeclaim-deleted":
                live.pop(name, None)
            if e["event"] in ("nodeclaim-created", "nodeclaim-deleted", "node-deleting", "node-ready",
                              "pod-created", "pod-deleted"):
                self.last_change = report.parse_time(e["time"])
        self.claims = set(live)
        self.instances = [i for i in aws.get("instances", []) if i["state"] in ("pending", "running")]
        self.rate = sum(i["pricePerHour"] for i in self.instances)

    def settled(self, pods):
        """PODS pods, all bound, on Ready nodes, one per NodeClaim, none going."""
        return (self.pods == pods and self.bound == pods and self.ready and
                len(self.nodes) == len(self.claims) == len(self.instances) and
                not any(n.get("unschedulable") for n in self.nodes))


class Story:
    def __init__(self, name, cluster, view, timing):
        self.name = name
        self.spec = STORIES[name]
        self.cluster = cluster
        self.view = view
        self.ttls = self.spec["timing"][timing]
        self.dwell_s = TIMING[timing]["dwell"]
        self.validation = TIMING[timing]["validation"]
        self.steps = []
        self.step = "starting"
        self.decision = None
        self.started = time.time()

    def elapsed(self, t=None):
        return (t or time.time()) - self.started

    def poll(self):
        """One look at the sim and the new log lines: the live view."""
        for o in self.cluster.read_log():
            if report.KEY_LINE.match(o["message"]) or o.get("level") in ("warn", "error"):
                t = report.parse_time(o["time"])
                self.view.line("  %+5.0fs %-15s %s" % (self.elapsed(t), o.get("logger", ""), o["message"]))
            if o.get("logger") == "kanna-reaper" and report.DECISION.match(o["message"]):
                self.decision = o
        snap = Snapshot(self.cluster.k8s_status(), self.cluster.aws_status())
        groups = {}
        for n in snap.nodes:
            key = "%s %s %s" % (n.get("instanceType") or "?", n.get("zone") or "?", n.get("capacityType") or "?")
            groups[key] = groups.get(key, 0) + 1
        nodes = ", ".join("%d× %s" % (c, k) for k, c in sorted(groups.items())) or "none"
        if self.decision:
            d = self.decision
            last = "%+.0fs %s: %s" % (self.elapsed(report.parse_time(d["time"])), d.get("reason", "?"), d["message"])
        else:
            last = "none yet"
        head = "%s  %+5.0fs  %s" % (self.name, self.elapsed(), self.step)
        body = ["pending pods %d   pods bound %d/%d   nodes %d   $%.4f/hour" % (
            snap.pods - snap.bound, snap.bound, snap.pods, len(snap.nodes), snap.rate),
            "nodes: " + nodes, "last decision: " + last]
        plain = "%+5.0fs pending %d, bound %d/%d, %d node(s) (%s), $%.4f/hour" % (
            self.elapsed(), snap.pods - snap.bound, snap.bound, snap.pods, len(snap.nodes), nodes, snap.rate)
        self.view.status([head] + body, plain, tuple(body[:2]))
        return snap

    def wait(self, what, timeout, cond):
        deadline = time.time() + timeout
        while True:
            snap = self.poll()
            if cond(snap):
                return snap
            if time.time() > deadline:
                raise DemoError("%s: not within %.0f s" % (what, timeout))
            time.sleep(1.0)

    def dwell(self, secs=None):
        end = time.time() + (self.dwell_s if secs is None else secs)
        while time.time() < end:
            self.poll()
            time.sleep(min(1.0, max(0.0, end - time.time())))

    def scale(self, replicas, label):
        self.step = label
        self.steps.append({"t": time.time(), "label": label})
        self.view.line("  %+5.0fs \u25b6 kubectl scale deployment inflate --replicas %d   (%s)" % (
            self.elapsed(), replicas, label))
        self.cluster.kubectl("scale", "deployment", "inflate", "--replicas", str(replicas))

    def apply(self):
        path = os.path.join(HERE, self.spec["manifest"])
        with open(path) as f:
            text = f.read()
        for key, value in self.ttls.items():
            text, n = re.subn(r"^(\s*%s:)\s*\S+" % key, r"\g<1> %s" % value, text, flags=re.M)
            if n != 1:
                raise DemoError("%s: no single %s to set" % (path, key))
        self.cluster.kubectl("apply", "-f", "-", stdin=text)
        self.view.line("  applied %s with %s" % (shown(path), ", ".join(
            "%s %s" % kv for kv in self.ttls.items())))

    def settle_consolidation(self, pods):
        """WhenEmptyOrUnderutilized: the reaper deletes or replaces the
        nodes it can, consolidateAfter after their last pod change and a
        validation delay later. Done once the cluster has been still for
        longer than that (nothing more would move)."""
        after = self.ttls["consolidateAfter"]
        quiet = seconds(after) + seconds(self.validation) + 3
        self.step = "consolidation (consolidateAfter %s)" % after
        self.wait("consolidation to settle", 120,
                  lambda s: s.settled(pods) and time.time() - s.last_change >= quiet)

    def run(self):
        ttl = self.ttls
        consolidates = self.spec["consolidates"]
        self.apply()
        self.started = time.time()
        self.scale(5, "0 → 5: one new node")
        self.wait("5 pods bound", 90, lambda s: s.settled(5))
        self.dwell()
        self.scale(20, "5 → 20: a second, larger node")
        self.wait("20 pods bound", 90, lambda s: s.settled(20))
        self.dwell()
        self.scale(10, "20 → 10: nothing launched")
        self.wait("10 pods left", 60, lambda s: s.pods == 10 and s.bound == 10)
        if consolidates:
            self.settle_consolidation(10)
        else:
            self.dwell()
        self.scale(5, "10 → 5")
        self.wait("5 pods left", 60, lambda s: s.pods == 5 and s.bound == 5)
        if consolidates:
            self.settle_consolidation(5)
        else:
            # Expiry: every NodeClaim there now expires; those with pods
            # are replaced first (or their pods go to a node that is not
            # expiring), then drained and terminated.
            self.dwell()
            old = self.poll().claims
            self.step = "expiry (ttlSecondsUntilExpired %s): replacement first, then drain" % (
                ttl["ttlSecondsUntilExpired"])
            self.wait("the NodeClaims %s expired and replaced" % " ".join(sorted(old)),
                      seconds(ttl["ttlSecondsUntilExpired"]) + 90,
                      lambda s: not (old & s.claims) and s.settled(5))
            self.dwell()
        self.scale(0, "5 → 0: empty nodes go")
        key = "consolidateAfter" if consolidates else "ttlSecondsAfterEmpty"
        self.step = "emptiness (%s %s)" % (key, ttl[key])
        self.wait("every node gone", seconds(ttl[key]) + 60,
                  lambda s: s.pods == 0 and not s.claims and not s.nodes and not s.instances)
        self.step = "done"
        self.poll()

    def record(self):
        """What the report reads, taken while the sim still runs."""
        d = self.cluster.dir
        with open(os.path.join(d, "k8s-status.json"), "w") as f:
            json.dump(self.cluster.k8s_status(), f)
        with open(os.path.join(d, "aws-status.json"), "w") as f:
            json.dump(self.cluster.aws_status(), f)
        with open(os.path.join(d, "events.json"), "w") as f:
            f.write(self.cluster.kubectl("get", "events", "-A", "-o", "json"))
        with open(os.path.join(d, "story.json"), "w") as f:
            json.dump({"name": self.name, "title": self.spec["title"], "settings": self.ttls,
                       "started": self.started, "ended": time.time(), "steps": self.steps}, f, indent=1)


def play(name, builddir, out, timing, view, number, total):
    spec = STORIES[name]
    story_dir = os.path.join(out, name)
    shutil.rmtree(story_dir, ignore_errors=True)
    os.makedirs(story_dir)
    bold(view, "\n== Story %d of %d: %s" % (number, total, spec["title"]))
    cluster = Cluster(builddir, story_dir, TIMING[timing], view)
    t0 = time.time()
    story = None
    try:
        cluster.start_sim()
        cluster.start_init()
        story = Story(name, cluster, view, timing)
        story.run()
        story.record()
    except BaseException:
        view.done()
        cluster.stop()
        if os.path.exists(cluster.log_path):
            sys.stdout.write("  last lines of %s:\n" % cluster.log_path)
            with open(cluster.log_path, errors="replace") as f:
                for raw in f.readlines()[-15:]:
                    sys.stdout.write("    " + raw)
        raise
    view.done()
    rc = cluster.stop()
    if rc != 0:
        raise DemoError("kanna-init exited with status %s (%s)" % (rc, cluster.log_path))
    exits = re.findall(r"(kanna-\w+) exited with status 0", open(cluster.log_path, errors="replace").read())
    view.line("  stopped: %s exited 0, kanna-init exited 0, kanna-sim stopped; story took %.0f s" % (
        ", ".join(sorted(set(exits))), time.time() - t0))
    return story_dir


def interrupted(signum, frame):
    raise KeyboardInterrupt


def main(argv):
    ap = argparse.ArgumentParser(description="kanna's demo: seed scenario S1 on kanna-sim")
    ap.add_argument("builddir", help="the build directory (./quickstart build: build/gcc)")
    ap.add_argument("--out", help="where the report and each story's recordings go (default BUILDDIR/demo)")
    ap.add_argument("--timing", choices=sorted(TIMING), default=os.environ.get("KANNA_DEMO_TIMING", "demo"))
    ap.add_argument("--stories", default=os.environ.get("KANNA_DEMO_STORIES", "provisioner,nodepool"))
    args = ap.parse_args(argv[1:])
    builddir = os.path.abspath(args.builddir)
    out = os.path.abspath(args.out or os.path.join(builddir, "demo"))
    names = [n for n in args.stories.split(",") if n]
    for n in names:
        if n not in STORIES:
            sys.stderr.write("demo: no story %r (have: %s)\n" % (n, ", ".join(STORIES)))
            return 2
    for p in ["sim/kanna-sim", "init/kanna-init"] + ["%s/kanna-%s" % (d, d) for d in DAEMONS]:
        if not os.access(os.path.join(builddir, p), os.X_OK):
            sys.stderr.write("demo: %s is not built (./quickstart build)\n" % os.path.join(builddir, p))
            return 1
    if not shutil.which("kubectl"):
        sys.stderr.write("demo: kubectl is needed (./quickstart deps installs it)\n")
        return 1
    os.makedirs(out, exist_ok=True)
    # SIGTERM and SIGHUP stop the demo as Ctrl-C does: everything it
    # started is stopped on the way out.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)
    view = View()
    print("kanna demo: seed scenario S1 on kanna-sim, %d stor%s (timing: %s); recordings in %s" % (
        len(names), "y" if len(names) == 1 else "ies", args.timing, shown(out)))
    dirs = []
    try:
        for k, n in enumerate(names):
            dirs.append(play(n, builddir, out, args.timing, view, k + 1, len(names)))
    except (DemoError, OSError) as e:
        print("demo: FAILED: %s" % e)
        return 1
    except KeyboardInterrupt:
        print("demo: interrupted; everything it started is stopped")
        return 130
    stories, path = report.write_report(out, dirs)
    bold(view, "\n== Summary")
    print(report.summary_text(stories))
    print("\nreport: %s" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
