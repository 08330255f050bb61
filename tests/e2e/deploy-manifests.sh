#!/bin/sh
# End-to-end: deploy/ holds together (issue 20, "Containers").
#  - the Containerfile, statically (no image can be built or pulled here),
#    against a `make install DESTDIR=` of this build: every COPY source is
#    installed, every shared library of the copied programs comes from a
#    runtime package (or its dependencies, or the base image), the final
#    USER is numeric and not root, the ENTRYPOINT is in exec form, and every
#    program the manifests start is in the image (tests/e2e/
#    deploy_containerfile.py); a copy with USER 0, a shell-form ENTRYPOINT,
#    a missing COPY source and no libzmq5 is refused for each;
#  - each ConfigMap's kanna.yaml passes --check-config of every daemon (and
#    of kanna-init for the single-container variant);
#  - against kanna-sim: `kubectl apply --dry-run=client` and
#    `--dry-run=server` of every manifest and of `-k deploy/`, the CRDs
#    applied for real; copies of kanna.yaml whose volumeMount names no
#    volume, and whose pod template is not selected by the Deployment's
#    selector, are refused with kube-apiserver's messages, as is a token
#    Secret naming no ServiceAccount.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v dpkg >/dev/null 2>&1 || { echo "SKIP: not a Debian system (dpkg -S names the packages)"; exit 77; }
/usr/bin/python3 -c 'import yaml' 2>/dev/null ||
	{ echo "SKIP: no python3-yaml (./quickstart deps installs it with python3-kubernetes)"; exit 77; }
deploy="$SRCDIR/deploy"
manifests="rbac.yaml tokens.yaml kanna.yaml kanna-single.yaml"

e2e_init
export KUBECACHEDIR="$tmp/kubecache"

# --- the Containerfile against what make install installs --------------------------------
# With the Containerfile's --prefix=/usr --sysconfdir=/etc, whatever this
# build was configured with.
make -s -C "$BUILDDIR" install DESTDIR="$tmp/dest" prefix=/usr sysconfdir=/etc >"$tmp/install.out" 2>&1 ||
	fail "make install DESTDIR: $(tail -n 20 "$tmp/install.out")"
check_containerfile() { # CONTAINERFILE OUT
	/usr/bin/python3 "$SRCDIR/tests/e2e/deploy_containerfile.py" "$1" "$tmp/dest" \
		"$deploy/kanna.yaml" "$deploy/kanna-single.yaml" >"$2" 2>"$2.stats"
}
check_containerfile "$deploy/Containerfile" "$tmp/containerfile.out" ||
	fail "deploy/Containerfile: $(cat "$tmp/containerfile.out")"
ok "Containerfile: $(cat "$tmp/containerfile.out.stats"), each library provided"
sed -e 's/ libzmq5 / /' -e 's/^USER .*/USER 0/' -e 's|/out/usr/bin/kanna-tap|/out/usr/bin/kanna-top|' \
	-e 's|^ENTRYPOINT .*|ENTRYPOINT /usr/bin/kanna-init --config=/etc/kanna/kanna.yaml|' \
	"$deploy/Containerfile" >"$tmp/Containerfile.broken"
! check_containerfile "$tmp/Containerfile.broken" "$tmp/broken-cf.out" ||
	fail "a broken Containerfile passed the checks"
for want in "libzmq.so.5 is in libzmq5" "USER is root" "not in exec form" \
	"kanna-top was not installed"; do
	grep -q "$want" "$tmp/broken-cf.out" || fail "the broken Containerfile: no '$want' in: $(cat "$tmp/broken-cf.out")"
done
ok "a Containerfile without libzmq5, as root, with a shell-form ENTRYPOINT and a missing COPY source is refused on each"

# --- the configuration each ConfigMap carries ---------------------------------------------
/usr/bin/python3 - "$tmp" "$deploy/kanna.yaml" "$deploy/kanna-single.yaml" <<'EOF'
import sys, yaml
tmp = sys.argv[1]
for path in sys.argv[2:]:
    for doc in yaml.safe_load_all(open(path)):
        if doc and doc["kind"] == "ConfigMap":
            with open(f"{tmp}/{doc['metadata']['name']}.yaml", "w") as f:
                f.write(doc["data"]["kanna.yaml"])
EOF
for cm in kanna-config kanna-single-config; do
	for d in watcher scheduler launcher reaper; do
		env -i PATH=/usr/bin:/bin "$BUILDDIR/$d/kanna-$d" --check-config --config="$tmp/$cm.yaml" \
			>"$tmp/check.out" 2>&1 || fail "kanna-$d --check-config of $cm: $(cat "$tmp/check.out")"
	done
done
env -i PATH=/usr/bin:/bin "$BUILDDIR/init/kanna-init" --check-config --config="$tmp/kanna-single-config.yaml" \
	>"$tmp/check.out" 2>&1 || fail "kanna-init --check-config: $(cat "$tmp/check.out")"
grep -q '^daemons: watcher,scheduler,launcher,reaper$' "$tmp/check.out" ||
	fail "kanna-init would not start the four daemons: $(grep daemons "$tmp/check.out")"
ok "both ConfigMaps pass every daemon's --check-config, and kanna-init's"

# --- the manifests against kanna-sim ------------------------------------------------------
start_sim
kubectl apply -k "$SRCDIR/data/crds" >"$tmp/crds.out" 2>&1 || fail "the CRDs: $(cat "$tmp/crds.out")"
ok "the CRDs apply: $(grep -o "^customresourcedefinition[^ ]* [a-z]*" "$tmp/crds.out" | sed "s/.*\///" | tr "\n" " ")"
for m in $manifests; do
	kubectl apply --dry-run=client -f "$deploy/$m" >"$tmp/client.out" 2>&1 ||
		fail "client dry run of deploy/$m: $(cat "$tmp/client.out")"
	kubectl apply --dry-run=server -f "$deploy/$m" >"$tmp/server.out" 2>&1 ||
		fail "server dry run of deploy/$m: $(cat "$tmp/server.out")"
	ok "deploy/$m: $(grep -c 'server dry run' "$tmp/server.out") objects pass kubectl apply --dry-run=client and =server"
done
kubectl apply --dry-run=server -k "$deploy" >"$tmp/kustomize.out" 2>&1 ||
	fail "server dry run of -k deploy/: $(cat "$tmp/kustomize.out")"
ok "kubectl apply -k deploy/ --dry-run=server: $(grep -c 'server dry run' "$tmp/kustomize.out") objects"

# A container mounting a volume the pod does not have (the runtime emptyDir
# dropped): ValidateVolumeMounts' field.NotFound, for each of the four.
awk '/^        - name: runtime$/ { skip = 4 } skip { skip--; next } { print }' \
	"$deploy/kanna.yaml" >"$tmp/no-volume.yaml"
! grep -q '^ *emptyDir:' "$tmp/no-volume.yaml" || fail "the broken copy still has its emptyDir"
if kubectl apply --dry-run=server -f "$tmp/no-volume.yaml" >"$tmp/no-volume.out" 2>&1; then
	fail "a Deployment mounting a volume it does not declare was accepted"
fi
# kubectl prints the causes of a 422, one per line.
grep -q 'The Deployment "kanna" is invalid' "$tmp/no-volume.out" &&
	[ "$(grep -c '^\* spec.template.spec.containers\[[0-3]\].volumeMounts\[0\].name: Not found: "runtime"$' \
		"$tmp/no-volume.out")" -eq 4 ] ||
	fail "no upstream message for a mount of no volume: $(cat "$tmp/no-volume.out")"
ok "a mount of an undeclared volume refused, in each container: $(grep -o 'containers\[0\].*' "$tmp/no-volume.out")"
# A pod template its Deployment's selector does not select.
sed '/^  template:$/,/^    spec:$/ s/app.kubernetes.io\/component: controller/app.kubernetes.io\/component: other/' \
	"$deploy/kanna.yaml" >"$tmp/unselected.yaml"
if kubectl apply --dry-run=server -f "$tmp/unselected.yaml" >"$tmp/unselected.out" 2>&1; then
	fail "a Deployment whose selector does not select its template was accepted"
fi
grep -q 'The Deployment "kanna" is invalid: spec.template.metadata.labels: Invalid value: map\[string\]string{"app.kubernetes.io/component":"other", "app.kubernetes.io/name":"kanna"}: `selector` does not match template `labels`' \
	"$tmp/unselected.out" || fail "no upstream message for an unselected template: $(cat "$tmp/unselected.out")"
ok "a template the selector does not select refused with upstream's message"
# A ServiceAccount token Secret that names no ServiceAccount: ValidateSecret's
# field.Required.
sed '0,/kubernetes.io\/service-account.name: kanna-watcher/ s/kubernetes.io\/service-account.name: kanna-watcher/kanna.example\/note: none/' \
	"$deploy/tokens.yaml" >"$tmp/no-account.yaml"
if kubectl apply --dry-run=server -f "$tmp/no-account.yaml" >"$tmp/no-account.out" 2>&1; then
	fail "a service-account-token Secret without its ServiceAccount was accepted"
fi
grep -q 'The Secret "kanna-watcher-token" is invalid: metadata.annotations\[kubernetes.io/service-account.name\]: Required value' \
	"$tmp/no-account.out" || fail "no upstream message for a token Secret of no account: $(cat "$tmp/no-account.out")"
ok "a token Secret naming no ServiceAccount refused: $(grep -o 'metadata.annotations.*' "$tmp/no-account.out")"
