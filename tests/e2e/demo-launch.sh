# Sourced by demo.sh: the whole scale-up path of scenario S5 on kanna-sim,
# with progress and the resulting nodes.
say "starting kanna-launcher (NodeClaims, EC2 Fleet, Nodes, pod binding)"
set -a
. "$tmp/state/aws.env"
set +a
start_launcher
wait_for "kanna-launcher" 30 grep -q "taking launch plans" "$tmp/launcher.log"
grep -E "AWS credentials .* accepted|taking launch plans" "$tmp/launcher.log" | sed 's/^[^ ]* [a-z]* *//; s/^/  /'

# progress APP WANT: a line per second until WANT pods of APP are bound.
progress() {
	i=0
	while :; do
		pending=$(kubectl get pods -l "app=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"|"}{end}' |
			tr '|' '\n' | grep -c '^$' || true)
		bound=$(bound_pods "app=$1")
		claims=$(kubectl get nodeclaims -o name | grep -c . || true)
		live=$(sim_instances | grep -cE 'state=(pending|running)' || true)
		printf '  t=%2ds  pending pods: %2d  nodeclaims: %d  instances: %d  bound pods: %2d/%d\n' \
			"$i" "$pending" "$claims" "$live" "$bound" "$2"
		if [ "$bound" -ge "$2" ]; then
			# What a user reads must be true: capacity came from instances.
			[ "$live" -gt 0 ] || fail "the progress line counts no instance"
			break
		fi
		i=$((i + 1))
		[ $i -le 90 ] || fail "pods of $1 were not all bound within 90 s"
		sleep 1
	done
}

say "kubectl scale deployment inflate --replicas 5"
kubectl scale deployment inflate --replicas 5 >/dev/null
progress inflate 5
say "kubectl scale deployment inflate --replicas 20"
kubectl scale deployment inflate --replicas 20 >/dev/null
progress inflate 20

say "waiting for the new nodes to turn Ready and the pods to run"
wait_for "every node Ready" 60 sh -c \
	"! kubectl get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}' | grep -qv '^True$'"
wait_for "every inflate pod Running" 60 sh -c \
	"! kubectl get pods -l app=inflate -o jsonpath='{range .items[*]}{.status.phase}{\"\\n\"}{end}' | grep -qv '^Running$'"
echo "  $(kubectl get nodes -o name | grep -c .) node(s) Ready, $(bound_pods app=inflate) pod(s) Running"

say "what the daemons logged (Karpenter's lines)"
grep -hE "found [0-9]+ provisionable|computed (new nodeclaim|packing)" "$tmp/scheduler.log" |
	sed 's/^[^ ]* [a-z]* *//; s/ nodeclaim=.*//; s/ shard=.*//; s/^/  /'
grep -hE "created nodeclaim|launched nodeclaim|bound [0-9]+ pod" "$tmp/launcher.log" |
	sed 's/^[^ ]* [a-z]* *//; s/ nodeclaim=.*//; s/^/  /'

say "the resulting nodes"
kubectl get nodes -L node.kubernetes.io/instance-type,topology.kubernetes.io/zone,karpenter.sh/capacity-type,intent
echo
sim_instances | awk '{ split($0, f, " "); for (i in f) { split(f[i], kv, "="); v[kv[1]] = kv[2] }
	printf "  %s  %-12s %-11s %-9s $%s/hour  nodeclaim %s\n", $2, v["type"], v["zone"], v["capacity"], v["price"], v["nodeclaim"] }'
echo
kubectl get pods -o wide | head -25
