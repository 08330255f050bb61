#!/bin/sh
# The systemd units as `make install DESTDIR=…` lays them out (issue 20):
#  - the tree: the daemons, kanna-tap and kanna-sim, the units, their
#    hardening drop-in (kanna-.service.d), sysusers.d and tmpfiles.d
#    entries, man pages, CRDs and the example /etc/kanna/kanna.yaml;
#  - `systemd-analyze verify` clean for every unit and kanna.target;
#  - `systemd-analyze security` at most 2.0 for every daemon's unit (and
#    above it without the drop-in: the score is the drop-in's doing);
#  - sysusers.d makes one user per daemon and the group kanna, tmpfiles.d
#    /run/kanna root:kanna 2770, as the units and the daemons expect;
#  - the example configuration passes every daemon's --check-config.
# Skipped, saying why, where systemd's tools are absent.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"

for t in systemd-analyze systemd-sysusers systemd-tmpfiles; do
	command -v $t >/dev/null 2>&1 || { echo "SKIP: no $t (./quickstart deps installs systemd)"; exit 77; }
done
daemons="watcher scheduler launcher reaper"
units="kanna-watcher.service kanna-scheduler@0.service kanna-launcher.service kanna-reaper.service"

e2e_init
root=$tmp/root
make -C "$BUILDDIR" -s install DESTDIR="$root" >"$tmp/install.log" 2>&1 ||
	fail "make install DESTDIR: $(tail -n 20 "$tmp/install.log")"
# The configured directories, as make install used them.
vars=$(printf 'print:\n\t@echo $(bindir) $(systemdunitdir) $(sysusersdir) $(tmpfilesdir) $(mandir) $(pkgdatadir) $(sysconfdir)\n' |
	make -s -C "$BUILDDIR" -f Makefile -f - print)
# shellcheck disable=SC2086
set -- $vars
bindir=$1 unitdir=$2 sysusersdir=$3 tmpfilesdir=$4 mandir=$5 pkgdatadir=$6 sysconfdir=$7

# --- the tree ---------------------------------------------------------------------------------
for f in $bindir/kanna-watcher $bindir/kanna-scheduler $bindir/kanna-launcher $bindir/kanna-reaper \
	$bindir/kanna-tap $bindir/kanna-sim \
	$unitdir/kanna.target $unitdir/kanna-watcher.service $unitdir/kanna-scheduler@.service \
	$unitdir/kanna-launcher.service $unitdir/kanna-reaper.service $unitdir/kanna-.service.d/hardening.conf \
	$sysusersdir/kanna.conf $tmpfilesdir/kanna.conf $sysconfdir/kanna/kanna.yaml \
	$mandir/man1/kanna-watcher.1 $mandir/man1/kanna-scheduler.1 $mandir/man1/kanna-launcher.1 \
	$mandir/man1/kanna-reaper.1 $mandir/man1/kanna-tap.1 \
	$pkgdatadir/crds/karpenter.sh_nodepools.yaml $pkgdatadir/crds/karpenter.sh_nodeclaims.yaml \
	$pkgdatadir/crds/karpenter.k8s.aws_ec2nodeclasses.yaml; do
	[ -s "$root$f" ] || fail "make install DESTDIR: no $f"
done
for d in $daemons; do
	[ -x "$root$bindir/kanna-$d" ] || fail "$bindir/kanna-$d is not executable"
	grep -qx "ExecStart=$bindir/kanna-$d" "$root$unitdir/kanna-$d"*.service ||
		fail "kanna-$d's unit does not start $bindir/kanna-$d"
done
ok "make install DESTDIR: binaries, units and their drop-in, sysusers.d, tmpfiles.d, man pages, CRDs, kanna.yaml"

# --- systemd-analyze verify ---------------------------------------------------------------------
# On the host's unit path (it needs sysinit.target and the like), with the
# units pointing at the installed binaries and the drop-in beside them.
mkdir -p "$tmp/units/kanna-.service.d"
cp "$root$unitdir/kanna-.service.d/hardening.conf" "$tmp/units/kanna-.service.d/"
cp "$root$unitdir/kanna.target" "$tmp/units/"
for f in "$root$unitdir"/kanna-*.service; do
	sed "s|^ExecStart=$bindir/|ExecStart=$root$bindir/|" "$f" >"$tmp/units/$(basename "$f")"
done
cp "$tmp/units/kanna-scheduler@.service" "$tmp/units/kanna-scheduler@0.service"
(cd "$tmp/units" && systemd-analyze verify --man=no $units kanna.target) >"$tmp/verify.log" 2>&1 ||
	fail "systemd-analyze verify: $(cat "$tmp/verify.log")"
# Not a word either: verify warns on stderr without failing.
[ ! -s "$tmp/verify.log" ] || fail "systemd-analyze verify said: $(cat "$tmp/verify.log")"
ok "systemd-analyze verify: every unit and kanna.target clean"

# --- systemd-analyze security -----------------------------------------------------------------
score() { # ROOT UNIT: its overall exposure level, one decimal
	systemd-analyze security --offline=yes --root="$1" "$2" 2>&1 |
		sed -n 's/.*Overall exposure level for [^ ]*: \([0-9.]*\).*/\1/p'
}
for u in $units; do
	s=$(score "$root" "$u")
	[ -n "$s" ] || fail "systemd-analyze security $u: $(systemd-analyze security --offline=yes --root="$root" "$u" 2>&1 | tail -n 5)"
	python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 2.0 else 1)" "$s" ||
		fail "systemd-analyze security: $u scores $s (at most 2.0)"
	ok "systemd-analyze security: $u $s"
done
mv "$root$unitdir/kanna-.service.d" "$tmp/dropin-aside"
s=$(score "$root" kanna-launcher.service)
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 2.0 else 1)" "$s" ||
	fail "without the drop-in kanna-launcher.service still scores $s: is the drop-in read at all?"
mv "$tmp/dropin-aside" "$root$unitdir/kanna-.service.d"
ok "without the hardening drop-in the launcher would score $s"

# --- sysusers.d and tmpfiles.d ------------------------------------------------------------------
sys=$tmp/sys
mkdir -p "$sys/etc" "$sys/run"
systemd-sysusers --root="$sys" "$root$sysusersdir/kanna.conf" >"$tmp/sysusers.log" 2>&1 ||
	fail "systemd-sysusers: $(cat "$tmp/sysusers.log")"
gid=$(awk -F: '$1 == "kanna" { print $3 }' "$sys/etc/group")
[ -n "$gid" ] || fail "sysusers.d made no group kanna: $(cat "$sys/etc/group")"
for d in $daemons; do
	u=$(awk -F: -v u="kanna-$d" '$1 == u { print $3 }' "$sys/etc/passwd")
	[ -n "$u" ] || fail "sysusers.d made no user kanna-$d"
	awk -F: '$1 == "kanna" { print $4 }' "$sys/etc/group" | tr ',' '\n' | grep -qx "kanna-$d" ||
		fail "kanna-$d is not in the group kanna"
	grep -qx "User=kanna-$d" "$root$unitdir/kanna-$d"*.service || fail "kanna-$d's unit runs as another user"
	grep -qx "Group=kanna" "$root$unitdir/kanna-$d"*.service || fail "kanna-$d's unit is not in the group kanna"
done
[ "$(awk -F: '$1 ~ /^kanna-/ { print $3 }' "$sys/etc/passwd" | sort -u | grep -c .)" -eq 4 ] ||
	fail "the daemons do not have four distinct uids: $(grep kanna "$sys/etc/passwd")"
systemd-tmpfiles --root="$sys" --create "$root$tmpfilesdir/kanna.conf" >"$tmp/tmpfiles.log" 2>&1 ||
	fail "systemd-tmpfiles: $(cat "$tmp/tmpfiles.log")"
expect_eq "tmpfiles.d: /run/kanna" "$(stat -c '%a %u %g' "$sys/run/kanna")" "2770 0 $gid"
ok "sysusers.d: kanna-watcher, -scheduler, -launcher, -reaper in the group kanna; tmpfiles.d: /run/kanna root:kanna 2770"

# --- the example configuration ------------------------------------------------------------------
for d in $daemons; do
	"$root$bindir/kanna-$d" --config "$root$sysconfdir/kanna/kanna.yaml" --check-config >"$tmp/check-$d.log" 2>&1 ||
		fail "kanna-$d --check-config on the example kanna.yaml: $(tail -n 5 "$tmp/check-$d.log")"
done
ok "the example kanna.yaml is valid for every daemon"
