"""The invariants of the chaos test (tests/e2e/chaos.sh), for chaos-check.py.

Checker reads what kanna-sim says happened, never what kanna says: the
directory chaos.sh snapshots (kubectl's JSON of the cluster, both /_sim/status
answers) and replays every binding of the sim's timeline against the
cluster as it was then. Each check_* method appends (invariant, object,
evidence) to Checker.violations; INVARIANTS names them all, in the order
the summary prints them.
"""
import collections
import datetime
import json
import os
import re

from chaos_budgets import check_budgets

INVARIANTS = [
    "instance-one-nodeclaim",
    "nodeclaim-one-instance",
    "pod-bound-once",
    "pod-on-missing-node",
    "pod-rejected",
    "node-overcommitted",
    "anti-affinity-violated",
    "spread-violated",
    "nodepool-limit-exceeded",
    "disruption-budget-exceeded",
    "pending-without-reason",
    "nodeclaim-unlaunched",
    "instance-terminated-once",
    "nodeclaim-instance-gone",
    "termination-stuck",
    "pdb-eviction-violated",
    "pod-not-drained",
    "timeline-incomplete",
    "nodes-left-at-zero",
    "instances-left-after-gc",
    "cost-off-fault-free",
    "not-converged",
    "daemon-crashed",
    "daemon-unhealthy",
    "sigterm-exit-nonzero",
]

# kanna's Events name this component (common/kube-events.c).
KANNA_COMPONENT = "karpenter"
# A pending pod's reason must be this fresh: kanna refreshes a repeating
# Event at most every 10 s and re-announces pending pods every 500 ms.
REASON_FRESH_SECONDS = 60
LIVE_STATES = ("pending", "running")
TERMINATION_FINALIZER = "karpenter.sh/termination"
ZONE = "topology.kubernetes.io/zone"

SUFFIXES = {
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
    "n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9,
    "T": 1e12, "P": 1e15, "E": 1e18,
}


def quantity(q):
    """A Kubernetes quantity as a float (cpu in cores, memory in bytes)."""
    if q is None:
        return 0.0
    if isinstance(q, (int, float)):
        return float(q)
    m = re.fullmatch(r"([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)", q.strip())
    if not m or m.group(2) not in SUFFIXES:
        raise ValueError("bad quantity %r" % q)
    return float(m.group(1)) * SUFFIXES[m.group(2)]


def ts(s):
    """RFC 3339 (with or without fraction) to seconds since the epoch."""
    if not s:
        return None
    s = s.replace("Z", "+00:00")
    return datetime.datetime.fromisoformat(s).timestamp()


def load(d):
    with open(os.path.join(d, "k8s.json")) as f:
        k8s = json.load(f)
    with open(os.path.join(d, "k8s-status.json")) as f:
        k8s_status = json.load(f)
    with open(os.path.join(d, "aws-status.json")) as f:
        aws_status = json.load(f)
    by_kind = collections.defaultdict(list)
    for item in k8s.get("items", []):
        by_kind[item.get("kind")].append(item)
    # EC2 as it was before kubectl listed the cluster (chaos.sh snapshot()).
    before = os.path.join(d, "aws-status-before.json")
    if os.path.exists(before):
        with open(before) as f:
            aws_status["before"] = json.load(f).get("instances", [])
    return by_kind, k8s_status, aws_status


def meta(o, key, default=None):
    return o.get("metadata", {}).get(key, default)


def pod_key(p):
    return "%s/%s" % (meta(p, "namespace"), meta(p, "name"))


def pod_live(p):
    return not meta(p, "deletionTimestamp") and \
        p.get("status", {}).get("phase") not in ("Succeeded", "Failed")


def pod_requests(p):
    cpu = mem = 0.0
    for c in p.get("spec", {}).get("containers", []):
        r = c.get("resources", {}).get("requests", {})
        cpu += quantity(r.get("cpu"))
        mem += quantity(r.get("memory"))
    return cpu, mem


def node_ready(n):
    for c in n.get("status", {}).get("conditions", []):
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def labels_match(selector, labels):
    """A metav1.LabelSelector; None matches nothing, {} everything."""
    if selector is None:
        return False
    labels = labels or {}
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        k, op, vals = e.get("key"), e.get("operator"), e.get("values") or []
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and k in labels and labels[k] in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


def node_expression(e, labels):
    k, op, vals = e.get("key"), e.get("operator"), e.get("values") or []
    v = labels.get(k)
    if op == "In":
        return v is not None and v in vals
    if op == "NotIn":
        return v is None or v not in vals
    if op == "Exists":
        return v is not None
    if op == "DoesNotExist":
        return v is None
    if op in ("Gt", "Lt") and v is not None and len(vals) == 1:
        try:
            a, b = int(v), int(vals[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def anti_terms(spec):
    return (((spec.get("affinity") or {}).get("podAntiAffinity") or {})
            .get("requiredDuringSchedulingIgnoredDuringExecution") or [])


def pod_selects_node(p, n):
    labels = meta(n, "labels", {}) or {}
    spec = p.get("spec", {})
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return False
    terms = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
    if not terms:
        return True
    return any(all(node_expression(e, labels) for e in t.get("matchExpressions") or [])
               for t in terms)


class Checker:
    def __init__(self, d, launch_timeout, grace, zones=()):
        self.kinds, self.k8s_status, self.aws_status = load(d)
        self.now = ts(self.k8s_status.get("time"))
        self.launch_timeout = launch_timeout
        self.grace = grace
        self.violations = []  # (invariant, key, evidence)
        self.pods = self.kinds["Pod"]
        self.nodes = {meta(n, "name"): n for n in self.kinds["Node"]}
        self.claims = {meta(c, "name"): c for c in self.kinds["NodeClaim"]}
        # v1 NodePools and v1alpha5 Provisioners (seed scenario S1) alike.
        self.pools = {meta(p, "name"): p for p in self.kinds["NodePool"] + self.kinds["Provisioner"]}
        # Nodes the test deleted by hand (as an operator), one name a line.
        path = os.path.join(d, "operator-deleted")
        self.operator_deleted = set(open(path).read().split()) if os.path.exists(path) else set()
        self.instances = self.aws_status.get("instances", [])
        # Each instance's state before the cluster was listed (else: after).
        self.state_before = {i["instanceId"]: i.get("state") for i in
                             self.aws_status.get("before", self.instances)}
        self.timeline = self.k8s_status.get("timeline", [])
        self.pod_by_key = {pod_key(p): p for p in self.pods}
        self.zones = zones
        self.registered = {}
        # kanna's plans: the NodeClaims say which pods were planned together.
        self.plan_of, self.plan_pods = {}, collections.defaultdict(list)
        for c in self.claims.values():
            ann = meta(c, "annotations", {}) or {}
            plan = ann.get("kanna.dev/plan")
            try:
                planned = json.loads(ann.get("kanna.dev/planned-pods") or "[]")
            except ValueError:
                planned = []
            for q in planned if plan else []:
                self.plan_of[q] = plan
                self.plan_pods[plan].append(q)

    def violate(self, invariant, key, evidence):
        self.violations.append((invariant, key, evidence))

    # -- instances and NodeClaims ------------------------------------------
    def check_instances(self):
        by_provider = collections.defaultdict(list)
        for c in self.claims.values():
            pid = c.get("status", {}).get("providerID")
            if pid:
                by_provider[pid.rsplit("/", 1)[-1]].append(meta(c, "name"))
        for i in self.instances:
            # Live before the NodeClaims were listed and after: a launch or
            # a termination while kubectl listed is no leak.
            if i.get("state") not in LIVE_STATES or \
                    self.state_before.get(i["instanceId"]) not in LIVE_STATES:
                continue
            iid = i["instanceId"]
            tag = (i.get("tags") or {}).get("karpenter.sh/nodeclaim")
            owners = set(by_provider.get(iid, []))
            if tag and tag in self.claims:
                owners.add(tag)
            if len(owners) != 1:
                self.violate("instance-one-nodeclaim", iid,
                             "%s instance %s (%s, launched %s, nodeclaim tag %s) has %d NodeClaim(s): %s"
                             % (i["state"], iid, i.get("instanceType"), i.get("launchTime"), tag,
                                len(owners), sorted(owners) or "none exists"))
        by_claim = collections.defaultdict(list)
        for i in self.instances:
            tag = (i.get("tags") or {}).get("karpenter.sh/nodeclaim")
            if tag:
                end = ts(i.get("terminateTime")) if i.get("terminateTime") else float("inf")
                by_claim[tag].append((ts(i["launchTime"]), end, i["instanceId"], i["state"]))
        for claim, ivs in by_claim.items():
            ivs.sort()
            for a in range(len(ivs)):
                for b in range(a + 1, len(ivs)):
                    if ivs[b][0] < ivs[a][1]:
                        self.violate("nodeclaim-one-instance", claim,
                                     "NodeClaim %s had instances %s (%s) and %s (%s) live at once"
                                     % (claim, ivs[a][2], ivs[a][3], ivs[b][2], ivs[b][3]))

    def check_launch_timeout(self):
        limit = self.launch_timeout + self.grace
        created, done = {}, {}
        for e in self.timeline:
            ev, name = e["event"], e["detail"].split(" ", 1)[0]
            if ev == "nodeclaim-created":
                created[name] = ts(e["time"])
                done.pop(name, None)
            elif ev in ("nodeclaim-launched", "nodeclaim-deleted") and name in created:
                done.setdefault(name, (ts(e["time"]), ev))
        for name, t0 in created.items():
            t1, how = done.get(name, (self.now, "still without an instance"))
            if t1 - t0 > limit:
                self.violate("nodeclaim-unlaunched", name,
                             "NodeClaim %s went %.0fs without an instance (%s), over the launch "
                             "timeout %ds + %ds" % (name, t1 - t0, how, self.launch_timeout, self.grace))

    # -- pods: every binding replayed from the sim's timeline -----------------
    def pod_info(self, key):
        """(labels, spec) of a pod, or of its Deployment's template once it is gone."""
        p = self.pod_by_key.get(key)
        if p:
            return meta(p, "labels", {}) or {}, p.get("spec", {})
        ns, name = key.split("/", 1)
        best = None
        for d in self.kinds["Deployment"]:
            dn = meta(d, "name")
            if meta(d, "namespace") == ns and name.startswith(dn + "-") and \
                    (best is None or len(dn) > len(meta(best, "name"))):
                best = d
        if not best:
            return None, None
        t = best.get("spec", {}).get("template", {})
        return (t.get("metadata") or {}).get("labels") or {}, t.get("spec") or {}

    def node_labels(self, name):
        n = self.nodes.get(name)
        if n:
            return meta(n, "labels", {}) or {}
        return self.registered.get(name, {})

    def pool_zones(self, spec):
        """Zones where the NodePools this pod may use can launch (Karpenter's domains)."""
        zones = set()
        for pool in self.pools.values():
            tmpl = (pool.get("spec") or {}).get("template") or {}
            labels = (tmpl.get("metadata") or {}).get("labels") or {}
            reqs = (tmpl.get("spec") or {}).get("requirements") or []
            if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
                continue
            allowed = set(self.zones)
            for r in reqs:
                if r.get("key") == ZONE and r.get("operator") == "In":
                    allowed &= set(r.get("values") or [])
            zones |= allowed
        return zones

    def replay(self):
        """Walks the timeline: each binding is checked against the cluster as it was."""
        self.registered = {}
        alive, bound, scheduled = set(), {}, {}
        events = []
        for idx, e in enumerate(self.timeline):
            parts = e["detail"].split(" ")
            events.append((idx, e["event"], ts(e["time"]), e["time"], parts))
            if e["event"] == "node-registered":
                self.registered[parts[0]] = {"kubernetes.io/hostname": parts[0]}
                if len(parts) >= 3:
                    self.registered[parts[0]][ZONE] = parts[2]
        # Which pods kanna bound (no pod-scheduled from the sim just before), and when.
        kanna_bound, last_sched = {}, {}
        for idx, ev, t, when, parts in events:
            if ev == "pod-scheduled" and len(parts) >= 2:
                last_sched[parts[0]] = parts[1]
            elif ev == "pod-bound" and len(parts) >= 2:
                if last_sched.get(parts[0]) != parts[1]:
                    kanna_bound.setdefault(parts[0], (idx, parts[1]))
        for idx, ev, t, when, parts in events:
            if ev == "node-registered":
                alive.add(parts[0])
            elif ev == "node-deleted":
                alive.discard(parts[0])
            elif ev == "pod-deleted":
                bound.pop(parts[0], None)
            elif ev == "pod-scheduled" and len(parts) >= 2:
                scheduled[parts[0]] = parts[1]
            elif ev == "pod-bound" and len(parts) >= 2:
                pod, node = parts[0], parts[1]
                by = "kube-scheduler-lite" if scheduled.pop(pod, None) == node else "kanna"
                if pod in bound:
                    self.violate("pod-bound-once", pod, "pod %s was bound to %s at %s while bound to %s"
                                 % (pod, node, when, bound[pod]))
                if node not in alive:
                    self.violate("pod-on-missing-node", pod,
                                 "%s bound pod %s to node %s at %s, when no such Node existed"
                                 % (by, pod, node, when))
                bound[pod] = node
                ctx = (pod, node, when, by)
                self.check_node_use(ctx, bound)
                self.check_anti_affinity_at(ctx, bound, alive)
                self.check_spread_at(ctx, bound, alive, kanna_bound, idx)
        for p in self.pods:
            n = p.get("spec", {}).get("nodeName")
            if n and n not in self.nodes and pod_live(p):
                self.violate("pod-on-missing-node", pod_key(p),
                             "pod %s is bound to node %s, which does not exist" % (pod_key(p), n))

    def check_node_use(self, ctx, bound):
        pod, node, when, by = ctx
        n = self.nodes.get(node)
        if not n:
            return
        alloc = n.get("status", {}).get("allocatable") or n.get("status", {}).get("capacity") or {}
        cpu = mem = 0.0
        names = []
        for q, qn in bound.items():
            if qn != node:
                continue
            labels, spec = self.pod_info(q)
            if spec is None:
                continue
            c, m = pod_requests({"spec": spec})
            cpu += c
            mem += m
            names.append(q.split("/", 1)[1])
        over = []
        if cpu > quantity(alloc.get("cpu")) + 1e-9:
            over.append("cpu %.3f of %s" % (cpu, alloc.get("cpu")))
        if mem > quantity(alloc.get("memory")):
            over.append("memory %.0fMi of %s" % (mem / 2**20, alloc.get("memory")))
        if "pods" in alloc and len(names) > quantity(alloc["pods"]):
            over.append("pods %d of %s" % (len(names), alloc["pods"]))
        if over:
            self.violate("node-overcommitted", node,
                         "%s bound pod %s to node %s at %s, taking its requests over its allocatable "
                         "(%s): %s" % (by, pod, node, when, ", ".join(over), " ".join(sorted(names))))

    def check_anti_affinity_at(self, ctx, bound, alive):
        pod, node, when, by = ctx
        labels, spec = self.pod_info(pod)
        if spec is None:
            return
        for q, qn in bound.items():
            if q == pod:
                continue
            ql, qs = self.pod_info(q)
            if qs is None:
                continue
            # Its terms against the others, and theirs against it (symmetry).
            for a, a_node, a_spec, b, b_node, b_labels in ((pod, node, spec, q, qn, ql),
                                                          (q, qn, qs, pod, node, labels)):
                for t in anti_terms(a_spec):
                    key = t.get("topologyKey")
                    namespaces = t.get("namespaces") or [a.split("/", 1)[0]]
                    if b.split("/", 1)[0] not in namespaces or not labels_match(t.get("labelSelector"), b_labels):
                        continue
                    va, vb = self.node_labels(a_node).get(key), self.node_labels(b_node).get(key)
                    if va is not None and va == vb:
                        pair = " ".join(sorted([pod, q]))
                        self.violate("anti-affinity-violated", pair,
                                     "%s bound pod %s to node %s at %s: %s=%s already held %s (node %s), "
                                     "against %s's required anti-affinity"
                                     % (by, pod, node, when, key, va, q, qn, a))

    def check_spread_at(self, ctx, bound, alive, kanna_bound, idx):
        pod, node, when, by = ctx
        labels, spec = self.pod_info(pod)
        if spec is None:
            return
        ns = pod.split("/", 1)[0]
        # Pods kanna planned together are placed together: count the rest
        # of this plan that kanna bound later as already there.
        later = []
        if by == "kanna":
            for q in self.plan_pods.get(self.plan_of.get(pod), [pod]):
                if q != pod and q in kanna_bound and kanna_bound[q][0] > idx:
                    later.append((q, kanna_bound[q][1]))
        for c in spec.get("topologySpreadConstraints") or []:
            if c.get("whenUnsatisfiable", "DoNotSchedule") != "DoNotSchedule":
                continue
            key, sel = c.get("topologyKey"), c.get("labelSelector")
            max_skew, min_domains = c.get("maxSkew", 1), c.get("minDomains") or 0

            def eligible(n):
                return self.node_labels(n).get(key) is not None and \
                    pod_selects_node({"spec": spec}, {"metadata": {"labels": self.node_labels(n)}})
            counts = {self.node_labels(n)[key]: 0 for n in alive if eligible(n)}
            if by == "kanna" and key == ZONE:
                for z in self.pool_zones(spec):
                    counts.setdefault(z, 0)
            ahead = 0
            for q, qn in list(bound.items()) + later:
                # A pod of the same plan bound later may go to a Node that
                # does not exist yet (its NodeClaim still launching): it
                # counts in that Node's domain all the same.
                if q.split("/", 1)[0] != ns or (qn not in alive and q in bound) or not eligible(qn):
                    continue
                ql, _ = self.pod_info(q)
                if ql is not None and labels_match(sel, ql):
                    v = self.node_labels(qn)[key]
                    counts[v] = counts.get(v, 0) + 1
                    ahead += q not in bound
            mine = self.node_labels(node).get(key)
            if mine is None or not counts:
                continue
            low = 0 if len(counts) < min_domains else min(counts.values())
            if counts[mine] - low > max_skew:
                self.violate("spread-violated", pod,
                             "%s bound pod %s to node %s (%s=%s) at %s, leaving %s %s over the %s "
                             "domains%s: skew %d > maxSkew %d"
                             % (by, pod, node, key, mine, when, json.dumps(sel, sort_keys=True),
                                json.dumps(counts, sort_keys=True),
                                "NodePools' and nodes'" if by == "kanna" and key == ZONE else "nodes'",
                                " (with %d more of its plan bound after)" % ahead if ahead else "",
                                counts[mine] - low, max_skew))

    def bound_pods(self):
        return [p for p in self.pods if p.get("spec", {}).get("nodeName") and pod_live(p)]

    def check_overcommit(self):
        use = collections.defaultdict(lambda: [0.0, 0.0, 0, []])
        for p in self.bound_pods():
            cpu, mem = pod_requests(p)
            u = use[p["spec"]["nodeName"]]
            u[0] += cpu
            u[1] += mem
            u[2] += 1
            u[3].append(meta(p, "name"))
        for name, (cpu, mem, count, pods) in use.items():
            n = self.nodes.get(name)
            if not n:
                continue
            alloc = n.get("status", {}).get("allocatable") or n.get("status", {}).get("capacity") or {}
            over = []
            if cpu > quantity(alloc.get("cpu")) + 1e-9:
                over.append("cpu %.3f of %s" % (cpu, alloc.get("cpu")))
            if mem > quantity(alloc.get("memory")):
                over.append("memory %.0fMi of %s" % (mem / 2**20, alloc.get("memory")))
            if "pods" in alloc and count > quantity(alloc["pods"]):
                over.append("pods %d of %s" % (count, alloc["pods"]))
            if over:
                self.violate("node-overcommitted", name,
                             "node %s holds requests over its allocatable (%s): %s"
                             % (name, ", ".join(over), " ".join(sorted(pods))))

    def domain(self, p, key):
        n = self.nodes.get(p.get("spec", {}).get("nodeName"))
        return (meta(n, "labels", {}) or {}).get(key) if n else None

    def check_anti_affinity(self):
        bound = self.bound_pods()
        for p in bound:
            for t in anti_terms(p.get("spec", {})):
                key = t.get("topologyKey")
                mine = self.domain(p, key)
                if mine is None:
                    continue
                namespaces = t.get("namespaces") or [meta(p, "namespace")]
                for q in bound:
                    if q is p or meta(q, "namespace") not in namespaces or \
                            not labels_match(t.get("labelSelector"), meta(q, "labels")):
                        continue
                    if self.domain(q, key) == mine:
                        pair = " ".join(sorted([pod_key(p), pod_key(q)]))
                        self.violate("anti-affinity-violated", pair,
                                     "pods %s share %s=%s (nodes %s, %s) against a required "
                                     "anti-affinity term" % (pair, key, mine, p["spec"]["nodeName"],
                                                             q["spec"]["nodeName"]))

    def kanna_reasons(self):
        """pod key -> newest time kanna said something about the pod."""
        newest = {}
        for e in self.kinds["Event"]:
            if (e.get("source") or {}).get("component") != KANNA_COMPONENT and \
                    e.get("reportingComponent") != KANNA_COMPONENT:
                continue
            inv = e.get("involvedObject") or {}
            if inv.get("kind") != "Pod":
                continue
            t = ts(e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp")
                   or meta(e, "creationTimestamp"))
            k = "%s/%s" % (inv.get("namespace"), inv.get("name"))
            if t and t > newest.get(k, 0):
                newest[k] = t
        return newest

    def pending(self):
        return [p for p in self.pods if not p.get("spec", {}).get("nodeName") and pod_live(p)]

    def check_pending(self):
        reasons = self.kanna_reasons()
        for p in self.pending():
            k = pod_key(p)
            t = reasons.get(k)
            if t is None or self.now - t > REASON_FRESH_SECONDS:
                cond = [c for c in p.get("status", {}).get("conditions", [])
                        if c.get("type") == "PodScheduled"]
                self.violate("pending-without-reason", k,
                             "pod %s (created %s) is pending and kanna %s; the sim's scheduler says: %s"
                             % (k, meta(p, "creationTimestamp"),
                                "never said why" if t is None else
                                "last said why %.0fs ago" % (self.now - t),
                                cond[0].get("message") if cond else "nothing"))

    def check_rejected(self):
        """No kubelet refused a pod: bound past a NoExecute taint (the
        kubelet's karpenter.sh/unregistered) or to a node that cannot hold it."""
        for p in self.pods:
            st = p.get("status", {})
            if st.get("phase") == "Failed":
                self.violate("pod-rejected", pod_key(p), "pod %s failed on %s: %s: %s"
                             % (pod_key(p), p.get("spec", {}).get("nodeName"), st.get("reason"),
                                st.get("message")))

    def check_limits(self):
        catalog = load_catalog()
        for name, pool in self.pools.items():
            limits = (pool.get("spec") or {}).get("limits") or {}
            if pool.get("kind") == "Provisioner":
                limits = limits.get("resources") or {}
            if not limits:
                continue
            edges = []
            for i in self.instances:
                if (i.get("tags") or {}).get("karpenter.sh/nodepool") != name:
                    continue
                t = catalog.get(i.get("instanceType"), (0, 0))
                start = ts(i["launchTime"])
                end = ts(i["terminateTime"]) if i.get("terminateTime") else float("inf")
                edges.append((start, 1, t, i["instanceId"]))
                edges.append((end, 0, t, i["instanceId"]))
            edges.sort(key=lambda e: (e[0], e[1]))
            cpu = mem = 0.0
            live, peak = set(), None
            for when, up, (vcpu, mib), iid in edges:
                sign = 1 if up else -1
                cpu += sign * vcpu
                mem += sign * mib * 2**20
                (live.add if up else live.discard)(iid)
                over = []
                if "cpu" in limits and cpu > quantity(limits["cpu"]) + 1e-9:
                    over.append("cpu %g > %s" % (cpu, limits["cpu"]))
                if "memory" in limits and mem > quantity(limits["memory"]):
                    over.append("memory %.0fMi > %s" % (mem / 2**20, limits["memory"]))
                if over and (peak is None or cpu > peak[0]):
                    peak = (cpu, when, over, sorted(live))
            if peak:
                self.violate("nodepool-limit-exceeded", name,
                             "NodePool %s held %s at %s with instances %s"
                             % (name, ", ".join(peak[2]),
                                datetime.datetime.fromtimestamp(peak[1], datetime.timezone.utc)
                                .strftime("%H:%M:%S"), " ".join(peak[3])))

    # -- removals (kanna-reaper) ----------------------------------------------
    def check_terminated_once(self):
        """Every instance that is not live was terminated by exactly one
        TerminateInstances call that changed it. The sim's AWS timeline has
        a "terminate" entry only when a call took a pending or running
        instance to shutting-down; a call on an instance already on its way
        out is answered with its state and recorded nowhere (EC2 makes the
        call idempotent). So 0 means it went without a TerminateInstances
        (nothing in this test stops instances otherwise), 2 or more that
        one instance was brought down twice."""
        count = collections.Counter()
        for e in self.aws_status.get("timeline", []):
            if e.get("event") == "terminate":
                count[e.get("detail", "").split(" ", 1)[0]] += 1
        for i in self.instances:
            iid = i["instanceId"]
            if i.get("state") in LIVE_STATES and not count[iid]:
                continue
            if count[iid] != 1:
                self.violate("instance-terminated-once", iid,
                             "%s instance %s (nodeclaim tag %s) was terminated by %d state-changing "
                             "TerminateInstances call(s), not 1"
                             % (i.get("state"), iid, (i.get("tags") or {}).get("karpenter.sh/nodeclaim"),
                                count[iid]))

    def check_termination_done(self):
        """After converging: no NodeClaim or Node left deleting with the
        termination finalizer, and every NodeClaim's instance live (the
        other half, every live instance owned, is instance-one-nodeclaim)."""
        live = {i["instanceId"]: i for i in self.instances}
        for kind, objs in (("NodeClaim", self.claims), ("Node", self.nodes)):
            for name, o in objs.items():
                if meta(o, "deletionTimestamp") and TERMINATION_FINALIZER in (meta(o, "finalizers") or []):
                    self.violate("termination-stuck", "%s/%s" % (kind, name),
                                 "%s %s is still being deleted (since %s) with the %s finalizer"
                                 % (kind, name, meta(o, "deletionTimestamp"), TERMINATION_FINALIZER))
        for name, c in self.claims.items():
            pid = (c.get("status") or {}).get("providerID")
            if not pid or meta(c, "deletionTimestamp"):
                continue
            i = live.get(pid.rsplit("/", 1)[-1])
            # Gone before the NodeClaims were listed: one terminated while
            # kubectl listed may have its NodeClaim deleting by now.
            if not i or self.state_before.get(i["instanceId"], i.get("state")) not in LIVE_STATES:
                self.violate("nodeclaim-instance-gone", name,
                             "NodeClaim %s (not being deleted) speaks for instance %s, which is %s"
                             % (name, pid.rsplit("/", 1)[-1],
                                i.get("state") if i else "unknown to EC2"))

    def check_pdb_evictions(self):
        """No pod a PodDisruptionBudget covers was evicted while the budget
        allowed no disruption. The sim notes each eviction with the budget's
        state just before it ("pod-evicted NS/POD NODE pdb NS/NAME allowed N
        [exempt WHY]"); a pending, unready, finished or terminating pod does
        not count against a budget (the API server's rule), so those are
        exempt."""
        for e in self.timeline:
            if e["event"] != "pod-evicted":
                continue
            parts = e["detail"].split(" ")
            if "pdb" not in parts:
                continue
            k = parts.index("pdb")
            pdb, allowed = parts[k + 1], int(parts[k + 3])
            exempt = parts[k + 5] if len(parts) > k + 5 and parts[k + 4] == "exempt" else None
            if allowed == 0 and not exempt:
                self.violate("pdb-eviction-violated", parts[0],
                             "pod %s was evicted from %s at %s while PodDisruptionBudget %s "
                             "allowed 0 disruptions" % (parts[0], parts[1] if k > 1 else "no node",
                                                        e["time"], pdb))

    def pdb_note(self, pod):
        """ " (PodDisruptionBudget NS/NAME)" when one covers the pod, else "". """
        labels, _ = self.pod_info(pod)
        for b in self.kinds["PodDisruptionBudget"]:
            if meta(b, "namespace") == pod.split("/", 1)[0] and labels is not None and \
                    labels_match((b.get("spec") or {}).get("selector") or {}, labels):
                return " (PodDisruptionBudget %s/%s)" % (meta(b, "namespace"), meta(b, "name"))
        return ""

    def check_drained(self):
        """No instance stopped under a pod that was still bound to its Node:
        a Node that was Ready goes NotReady in the sim only once its
        instance is shutting down, and by then the drain must have evicted
        (and seen gone) every pod there (this test runs no DaemonSet)."""
        bound, ready = {}, set()
        for e in self.timeline:
            ev, parts = e["event"], e["detail"].split(" ")
            if ev == "pod-bound" and len(parts) >= 2:
                bound[parts[0]] = parts[1]
            elif ev == "pod-deleted":
                bound.pop(parts[0], None)
            elif ev == "node-ready":
                ready.add(parts[0])
            elif ev == "node-not-ready" and parts[0] in ready:
                ready.discard(parts[0])
                for pod, node in bound.items():
                    if node == parts[0]:
                        self.violate("pod-not-drained", pod,
                                     "node %s went NotReady (its instance stopping) at %s with pod %s%s "
                                     "still bound to it, not drained"
                                     % (node, e["time"], pod, self.pdb_note(pod)))

    def check_timelines(self):
        for side, st in (("k8s", self.k8s_status), ("aws", self.aws_status)):
            if st.get("timelineDropped"):
                self.violate("timeline-incomplete", side,
                             "the sim's %s timeline dropped %d entries" % (side, st["timelineDropped"]))

    def check_all(self):
        self.check_instances()
        self.check_launch_timeout()
        self.replay()
        self.check_overcommit()
        self.check_anti_affinity()
        self.check_rejected()
        self.check_limits()
        self.check_pending()
        self.check_terminated_once()
        self.check_termination_done()
        self.check_pdb_evictions()
        self.check_drained()
        check_budgets(self)
        self.check_timelines()

    # -- convergence ---------------------------------------------------------
    def unsettled(self):
        """What keeps the cluster from having converged (empty: settled)."""
        why = []
        by_provider = {(n.get("spec", {}).get("providerID") or ""): n for n in self.nodes.values()}
        for name, c in self.claims.items():
            if meta(c, "deletionTimestamp"):
                why.append("NodeClaim %s is being deleted" % name)
                continue
            pid = c.get("status", {}).get("providerID")
            if not pid:
                why.append("NodeClaim %s has no instance" % name)
            elif pid not in by_provider or not node_ready(by_provider[pid]):
                why.append("NodeClaim %s has no Ready Node" % name)
        for name, n in self.nodes.items():
            if meta(n, "deletionTimestamp"):
                why.append("Node %s is being deleted" % name)
            if any(t.get("key") == "karpenter.sh/unregistered" for t in n.get("spec", {}).get("taints") or []):
                why.append("Node %s still carries karpenter.sh/unregistered" % name)
        self.violations = []
        self.check_instances()
        why += [v[2] for v in self.violations]
        reasons = self.kanna_reasons()
        for p in self.pending():
            t = reasons.get(pod_key(p))
            if t is None or self.now - t > REASON_FRESH_SECONDS:
                why.append("pod %s is pending without a reason from kanna" % pod_key(p))
        return why


def load_catalog():
    """instance type -> (vCPUs, memory MiB), from the catalog kanna-sim serves."""
    path = os.environ.get("KANNA_CATALOG") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "instance-types.tsv")
    out = {}
    with open(path) as f:
        head = f.readline().rstrip("\n").split("\t")
        name, vcpu, mib = head.index("name"), head.index("vcpu"), head.index("memory_mib")
        for line in f:
            row = line.rstrip("\n").split("\t")
            if len(row) > max(name, vcpu, mib):
                out[row[name]] = (float(row[vcpu]), float(row[mib]))
    return out
