#!/bin/sh
# End-to-end: every daemon's /metrics, scraped after a scale-up and a
# removal, parses as Prometheus text format — with prometheus_client's own
# parser, a second reader besides ours — and carries exactly the families
# doc/metrics.md lists for that daemon: none missing, none undocumented
# (issue 20). Also each one's /healthz and /readyz.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }
python3 -c 'import prometheus_client' 2>/dev/null ||
	{ echo "SKIP: no python3-prometheus-client (./quickstart deps)"; exit 77; }

e2e_init
# Eight free loopback ports: metrics and health for each daemon.
set -- $(python3 -c '
import socket
socks = [socket.socket() for _ in range(8)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))')
wm=$1 wh=$2 sm=$3 sh=$4 lm=$5 lh=$6 rm=$7 rh=$8

start_sim
set -a
. "$tmp/state/aws.env"
set +a
start watcher "$BUILDDIR/watcher/kanna-watcher" --runtime-dir "$tmp/run" --metrics-port "$wm" \
	--health-port "$wh" --leader-elect=false --announce-interval 500ms
start scheduler "$BUILDDIR/scheduler/kanna-scheduler" --runtime-dir "$tmp/run" --metrics-port "$sm" \
	--health-port "$sh" --leader-elect=false --batch-idle-duration 500ms
start launcher "$BUILDDIR/launcher/kanna-launcher" --runtime-dir "$tmp/run" --metrics-port "$lm" \
	--health-port "$lh" --leader-elect=false --reconcile-period 1s
# The reaper listens on every address, as in a pod.
start reaper "$BUILDDIR/reaper/kanna-reaper" --runtime-dir "$tmp/run" --metrics-port "$rm" \
	--health-port "$rh" --http-listen-address 0.0.0.0 --leader-elect=false --reconcile-period 500ms

for p in $wh $sh $lh $rh; do
	wait_for "/readyz on port $p" 30 curl -sf "http://127.0.0.1:$p/readyz"
	expect_eq "/healthz on port $p" "$(curl -sS "http://127.0.0.1:$p/healthz")" ok
done
ok "every daemon is healthy and ready"
if command -v ss >/dev/null 2>&1; then
	ss -ltn | grep -q "0.0.0.0:$rm " || fail "the reaper's metrics port is not on 0.0.0.0: $(ss -ltn | grep ":$rm ")"
	ss -ltn | grep -q "127.0.0.1:$wm " || fail "the watcher's metrics port is not on loopback: $(ss -ltn | grep ":$wm ")"
	ok "http-listen-address: 0.0.0.0 for the reaper, loopback by default"
fi
if "$BUILDDIR/watcher/kanna-watcher" --runtime-dir "$tmp/run2" --http-listen-address nowhere \
	--leader-elect=false >"$tmp/badaddr.log" 2>&1; then
	fail "a watcher with http-listen-address 'nowhere' started"
fi
grep -q "http-listen-address must be an IPv4 or IPv6 address" "$tmp/badaddr.log" ||
	fail "no clear error for a bad http-listen-address: $(cat "$tmp/badaddr.log")"
ok "a bad http-listen-address is refused, naming the key"

# Some work, so that labelled families have series: a scale-up, then the
# deployment gone and its node removed as empty.
kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null
kubectl patch nodepool default --type merge \
	-p '{"spec":{"disruption":{"consolidationPolicy":"WhenEmpty","consolidateAfter":"1s"}}}' >/dev/null
kubectl scale deployment inflate --replicas 3 >/dev/null
wait_for "3 inflate pods bound" 60 sh -c "[ \$(kubectl get pods -l app=inflate -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .) = 3 ]"
kubectl scale deployment inflate --replicas 0 >/dev/null
wait_for "the empty node removed" 60 sh -c "[ -z \"\$(kubectl get nodes -o name)\" ]"
ok "a node launched and removed"

for d in watcher:$wm scheduler:$sm launcher:$lm reaper:$rm; do
	name=${d%%:*} port=${d#*:}
	curl -sS -D "$tmp/$name.headers" -o "$tmp/$name.prom" "http://127.0.0.1:$port/metrics" ||
		fail "kanna-$name's /metrics on port $port"
	grep -qi '^content-type: text/plain; version=0.0.4' "$tmp/$name.headers" ||
		fail "kanna-$name's /metrics content type: $(grep -i content-type "$tmp/$name.headers")"
done
python3 - "$SRCDIR/doc/metrics.md" "$tmp" "$SRCDIR" <<'PY' || fail "the scraped metrics do not match doc/metrics.md"
import glob, re, sys
from prometheus_client.parser import text_string_to_metric_families

doc, tmp, src = sys.argv[1], sys.argv[2], sys.argv[3]
# doc/metrics.md rows: | `name` | type | labels | daemons | appears | meaning |
want, documented = {}, set()
for line in open(doc):
    m = re.match(r"^\| `([a-z0-9_]+)` \| (counter|gauge|histogram) \| ([^|]*) \| ([^|]+) \| (always|first event) \|", line)
    if m:
        documented.add(m.group(1))
        labels = set(re.findall(r"`([a-z_]+)`", m.group(3)))
        for d in re.findall(r"[a-z]+", m.group(4)):
            want.setdefault(d, {})[m.group(1)] = (m.group(2), labels, m.group(5) == "always")
bad = []
# Every family the daemons' sources register is documented.
registered = set()
for d in ("common", "state", "watcher", "scheduler", "launcher", "reaper", "init"):
    for path in glob.glob(f"{src}/{d}/*.c"):
        registered |= set(re.findall(r'"((?:karpenter|kanna)_[a-z0-9_]+)"', open(path).read()))
for name in sorted(registered - documented):
    bad.append(f"{name} is registered in the sources but not in doc/metrics.md")
for name in sorted(documented - registered):
    bad.append(f"{name} is in doc/metrics.md but no source registers it")
for daemon in ("watcher", "scheduler", "launcher", "reaper"):
    text = open(f"{tmp}/{daemon}.prom").read()
    got = {}
    for fam in text_string_to_metric_families(text):
        name = fam.name
        # prometheus_client strips _total from counter families.
        if fam.type == "counter":
            name += "_total"
        labels = set()
        for s in fam.samples:
            labels |= set(s.labels) - {"le"}
        got[name] = (fam.type, labels)
    for name, (typ, labels, always) in sorted(want.get(daemon, {}).items()):
        if name not in got:
            if always:
                bad.append(f"kanna-{daemon}: documented {name} is not exposed")
        elif got[name][0] != typ:
            bad.append(f"kanna-{daemon}: {name} is a {got[name][0]}, documented as a {typ}")
        elif got[name][1] != labels:
            bad.append(f"kanna-{daemon}: {name} has labels {sorted(got[name][1])}, documented {sorted(labels)}")
    for name in sorted(set(got) - set(want.get(daemon, {}))):
        bad.append(f"kanna-{daemon}: {name} is exposed but not in doc/metrics.md for it")
    print(f"kanna-{daemon}: {len(got)} families, "
          f"{sum(1 for l in text.splitlines() if l and not l.startswith('#'))} samples")
    # The flow is counted: this run sent and took messages on every daemon.
    if not any(n == "kanna_messages_total" for n in got):
        bad.append(f"kanna-{daemon}: no kanna_messages_total series after a scale-up")
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
PY
ok "every daemon's /metrics parses (prometheus_client) and matches doc/metrics.md"
