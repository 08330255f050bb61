#!/bin/sh
# End-to-end: the per-daemon RBAC of deploy/rbac.yaml means something.
#  - kubectl apply --dry-run=server and --dry-run=client of the manifest
#    succeed against kanna-sim; a copy with a rule without verbs is refused
#    by the server's RBAC validation with upstream's message, as are a
#    changed roleRef and a ClusterRoleBinding's ServiceAccount without a
#    namespace;
#  - all four daemons, with leader election on (so the watcher's,
#    launcher's and reaper's Lease calls happen; the scheduler makes none),
#    run an unschedulable pod in another namespace (FailedScheduling), a
#    scale-up to 3 pods, a `kubectl delete nodeclaim` (taint, drain,
#    evictions, finalizers) and a scale to 0; kanna-sim records every
#    request per User-Agent as kube-apiserver's authorizer sees it (verb,
#    API group, resource, subresource, namespace, names), and an RBAC
#    evaluator checks each daemon's requests against the roles its
#    ServiceAccount is bound to in deploy/rbac.yaml. Any request not
#    allowed fails the test, named; rules no request exercised are printed.
#  - the evaluator itself is shown to fail: with the launcher's
#    pods/binding rule removed, its binds are named as refused.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }
manifest="$SRCDIR/deploy/rbac.yaml"

e2e_init
printf 'kubelet-boot-ms: 1000\n' >"$tmp/sim.yaml"
start_sim --config "$tmp/sim.yaml"

# --- the manifest against the API server's validation ------------------------------------
kubectl apply --dry-run=server -f "$manifest" >"$tmp/dry-server.out" 2>&1 ||
	fail "server dry run of deploy/rbac.yaml: $(cat "$tmp/dry-server.out")"
ok "kubectl apply --dry-run=server: $(grep -c 'server dry run' "$tmp/dry-server.out") objects"
kubectl apply --dry-run=client -f "$manifest" >"$tmp/dry-client.out" 2>&1 ||
	fail "client dry run of deploy/rbac.yaml: $(cat "$tmp/dry-client.out")"
ok "kubectl apply --dry-run=client: $(grep -c 'dry run' "$tmp/dry-client.out") objects"
# The first rule whose verbs are a one-line list loses them.
awk '!done && /^    verbs: \[/ { done = 1; next } { print }' "$manifest" >"$tmp/broken.yaml"
if kubectl apply --dry-run=server -f "$tmp/broken.yaml" >"$tmp/broken.out" 2>&1; then
	fail "a rule without verbs was accepted"
fi
grep -q 'is invalid: rules\[[0-9]*\]\.verbs: Required value: verbs must contain at least one value' \
	"$tmp/broken.out" || fail "no upstream validation message: $(cat "$tmp/broken.out")"
ok "a rule without verbs refused: $(grep 'is invalid' "$tmp/broken.out")"
kubectl apply -f "$manifest" >/dev/null
if kubectl patch clusterrolebinding kanna-reaper --type merge \
	-p '{"roleRef":{"name":"kanna-launcher"}}' >"$tmp/roleref.out" 2>&1; then
	fail "a binding's roleRef was changed"
fi
grep -q 'roleRef: Invalid value: rbac.RoleRef{.*Name:"kanna-launcher"}: cannot change roleRef' \
	"$tmp/roleref.out" || fail "no upstream message for a changed roleRef: $(cat "$tmp/roleref.out")"
ok "a binding's roleRef is immutable: $(cat "$tmp/roleref.out")"
if kubectl apply -f - >"$tmp/subject.out" 2>&1 <<'YAML'; then
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: no-namespace}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kanna-reaper}
subjects: [{kind: ServiceAccount, name: kanna-reaper}]
YAML
	fail "a ClusterRoleBinding took a ServiceAccount without a namespace"
fi
grep -q 'subjects\[0\]\.namespace: Required value' "$tmp/subject.out" ||
	fail "no upstream message for a subject without namespace: $(cat "$tmp/subject.out")"
ok "a ClusterRoleBinding's ServiceAccount needs a namespace"
kubectl apply --dry-run=client -o json -f "$manifest" >"$tmp/rbac.json"

# --- the daemons, leader election on ------------------------------------------------------
set -a
. "$tmp/state/aws.env"
set +a
start watcher "$BUILDDIR/watcher/kanna-watcher" --runtime-dir "$tmp/run" --metrics-port 0 \
	--health-port 0 --leader-elect=true --announce-interval 500ms
# The scheduler's shards do not elect: no Lease rule is theirs.
start scheduler "$BUILDDIR/scheduler/kanna-scheduler" --runtime-dir "$tmp/run" \
	--metrics-port 0 --health-port 0 --leader-elect=true --batch-idle-duration 500ms \
	--plan-timeout 30s
start_launcher --leader-elect=true
start_reaper --leader-elect=true
for d in watcher launcher reaper; do
	wait_for "the $d to hold the replica's Lease" 60 grep -q "acquired lease kanna-leader-election" \
		"$tmp/$d.log"
done
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"
wait_for "the reaper" 30 grep -q "reaping for cluster" "$tmp/reaper.log"

kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null
# User data: the state feed carries its SHA-256, the launcher GETs the text.
kubectl patch ec2nodeclass default --type merge \
	-p '{"spec":{"userData":"#!/bin/sh\necho rbac-e2e\n"}}' >/dev/null
# A tenant's pod no instance type fits: the scheduler's FailedScheduling
# Event goes to the pod's namespace (Events are written cluster-wide).
kubectl create namespace tenant >/dev/null
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: too-big, namespace: tenant}
spec:
  containers:
  - {name: c, image: pause, resources: {requests: {cpu: "10000"}}}
YAML
wait_for "the scheduler to give up on tenant/too-big" 60 grep -q "could not schedule pod" "$tmp/scheduler.log"
kubectl scale deployment inflate --replicas 3 >/dev/null
wait_for "3 pods bound" 120 sh -c "[ \$(kubectl get pods -l app=inflate -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .) = 3 ]"
claim=$(kubectl get nodeclaims -o jsonpath='{.items[0].metadata.name}')
kubectl delete nodeclaim "$claim" --wait=false >/dev/null
wait_for "nodeclaim $claim gone" 120 gone nodeclaim "$claim"
ok "nodeclaim $claim deleted, drained and gone"
kubectl scale deployment inflate --replicas 0 >/dev/null
kubectl delete pod -n tenant too-big --wait=false >/dev/null
wait_for "no inflate pods" 60 sh -c "[ -z \"\$(kubectl get pods -l app=inflate -o name)\" ]"
sleep 2
k8s_status >"$tmp/k8s-status.json"
python3 - "$tmp/k8s-status.json" <<'PY' || fail "the launcher never got the EC2NodeClass for its user data"
import json, sys
counts = json.load(open(sys.argv[1]))["requests"]["counts"]
sys.exit(not any(q.get("userAgent", "").startswith("kanna-launcher/") and q.get("verb") == "get" and
                 q.get("resource") == "ec2nodeclasses" for q in counts))
PY
ok "the launcher got EC2NodeClass default for its user data"

# --- every request against the daemon's roles --------------------------------------------
cat >"$tmp/rbac-check.py" <<'PY'
"""Checks each kanna daemon's recorded requests against deploy/rbac.yaml.

RBAC as kube-apiserver's authorizer evaluates it
(plugin/pkg/auth/authorizer/rbac/rbac.go RulesAllow and
pkg/apis/rbac/v1/evaluation_helpers.go): a request is allowed when a rule
of a role its subject is bound to matches verb, API group, resource
("pods/binding" for a subresource), resourceNames (a rule with names never
matches a request without one) and, for a RoleBinding, the namespace.
Non-resource URLs: the bootstrap ClusterRoles system:discovery and
system:public-info-viewer, bound to every authenticated user, allow GET of
/api, /api/*, /apis, /apis/*, /openapi, /openapi/*, /version, /healthz,
/livez and /readyz (bootstrappolicy/policy.go)."""
import json, sys

manifest, status = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
daemons = ["watcher", "scheduler", "launcher", "reaper"]
ns = "kube-system"
objs = manifest.get("items", [manifest])
by_key = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objs}
DISCOVERY = ["/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", "/version",
             "/version/", "/healthz", "/livez", "/readyz"]

def rules_of(sa):
    """(rule, namespace or None for cluster-wide, role label) bound to sa."""
    out = []
    for o in objs:
        if o["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        if not any(s.get("kind") == "ServiceAccount" and s.get("name") == sa and
                   s.get("namespace", o["metadata"].get("namespace")) == ns
                   for s in o.get("subjects", [])):
            continue
        ref = o["roleRef"]
        bns = o["metadata"].get("namespace") if o["kind"] == "RoleBinding" else None
        role_ns = bns if ref["kind"] == "Role" else ""
        role = by_key.get((ref["kind"], role_ns, ref["name"]))
        if role is None:
            sys.exit("FAIL: %s %s binds %s %s, which the manifest lacks" %
                     (o["kind"], o["metadata"]["name"], ref["kind"], ref["name"]))
        for i, r in enumerate(role.get("rules", [])):
            out.append((r, bns, "%s %s rules[%d]" % (ref["kind"], ref["name"], i)))
    return out

def has(lst, v):
    return "*" in lst or v in lst

def resource_ok(rule, res, sub):
    want = res + ("/" + sub if sub else "")
    rs = rule.get("resources", [])
    return "*" in rs or want in rs or (sub and (res + "/*" in rs or "*/" + sub in rs))

def url_ok(patterns, url):
    return any(p == url or (p.endswith("*") and url.startswith(p[:-1])) for p in patterns)

def matches(rule, bns, req):
    if not has(rule.get("verbs", []), req["verb"]):
        return False
    if "nonResourceURL" in req:
        return bns is None and url_ok(rule.get("nonResourceURLs", []), req["nonResourceURL"])
    if bns is not None and req.get("namespace", "") != bns:
        return False
    if not has(rule.get("apiGroups", []), req.get("apiGroup", "")):
        return False
    if not resource_ok(rule, req.get("resource", ""), req.get("subresource", "")):
        return False
    names = rule.get("resourceNames")
    if names:
        got = req.get("names", [])
        return bool(got) and not req.get("moreNames") and all(n in names for n in got)
    return True

def describe(req):
    if "nonResourceURL" in req:
        return "%s %s" % (req["verb"], req["nonResourceURL"])
    what = req.get("resource", "") + ("/" + req["subresource"] if req.get("subresource") else "")
    group = req.get("apiGroup") or "core"
    where = (" in namespace " + req["namespace"]) if req.get("namespace") else ""
    names = (" " + ",".join(req["names"])) if req.get("names") else ""
    return "%s %s (%s)%s%s" % (req["verb"], what, group, names, where)

reqs = status["requests"]
if reqs.get("dropped"):
    sys.exit("FAIL: the sim dropped %d request tuples" % reqs["dropped"])
bad, used, n_reqs = [], set(), {}
for d in daemons:
    sa = "kanna-" + d
    rules = rules_of(sa)
    mine = [q for q in reqs["counts"] if q.get("userAgent", "").startswith(sa + "/")]
    n_reqs[d] = sum(q["count"] for q in mine)
    for q in mine:
        hit = [label for r, bns, label in rules if matches(r, bns, q)]
        what = q.get("resource", "") + ("/" + q["subresource"] if q.get("subresource") else "")
        used.update((label, q["verb"], q.get("apiGroup", ""), what) for label in hit)
        if not hit and not ("nonResourceURL" in q and q["verb"] == "get" and
                  url_ok(DISCOVERY, q["nonResourceURL"])):
            bad.append("%s: %s, %d time(s)" % (sa, describe(q), q["count"]))
    print("  %s: %d requests, %d distinct, checked against %d rules" %
          (sa, n_reqs[d], len(mine), len(rules)))
    for q in sorted(mine, key=describe):
        print("    %s x%d" % (describe(q), q["count"]))
for d in daemons:
    if not n_reqs[d]:
        bad.append("kanna-%s made no request at all: the check saw nothing of it" % d)
if not any(q.get("resource") == "leases" and q["verb"] in ("create", "update")
           for q in reqs["counts"] if q.get("userAgent", "").startswith("kanna-")):
    bad.append("no daemon wrote a Lease: leader election was not exercised")
for o in objs:
    if o["kind"] in ("ClusterRole", "Role"):
        for i, r in enumerate(o.get("rules", [])):
            label = "%s %s rules[%d]" % (o["kind"], o["metadata"]["name"], i)
            idle = ["%s %s%s" % (v, res, " (%s)" % g if g else "")
                    for v in r.get("verbs", []) for g in r.get("apiGroups", [])
                    for res in r.get("resources", []) if (label, v, g, res) not in used]
            if idle:
                print("  not exercised (informational): %s: %s" % (label, ", ".join(idle)))
for b in bad:
    print("NOT ALLOWED: " + b)
sys.exit(1 if bad else 0)
PY
python3 "$tmp/rbac-check.py" "$tmp/rbac.json" "$tmp/k8s-status.json" >"$tmp/rbac-check.out" 2>&1 ||
	{ cat "$tmp/rbac-check.out"; fail "a daemon made a request its RBAC does not allow"; }
cat "$tmp/rbac-check.out"
ok "every request of the four daemons is allowed by deploy/rbac.yaml"

# The evaluator refuses what the roles do not allow: no pods/binding for the launcher.
python3 - "$tmp/rbac.json" >"$tmp/narrow.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for o in m["items"]:
    if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "kanna-launcher":
        o["rules"] = [r for r in o["rules"] if "pods/binding" not in r.get("resources", [])]
json.dump(m, sys.stdout)
PY
if python3 "$tmp/rbac-check.py" "$tmp/narrow.json" "$tmp/k8s-status.json" >"$tmp/narrow.out" 2>&1; then
	fail "the evaluator allowed the launcher's binds without a pods/binding rule"
fi
grep -q "NOT ALLOWED: kanna-launcher: create pods/binding" "$tmp/narrow.out" ||
	fail "the narrowed roles' refusal does not name the binds: $(cat "$tmp/narrow.out")"
ok "without pods/binding: $(grep -m1 'NOT ALLOWED' "$tmp/narrow.out")"
