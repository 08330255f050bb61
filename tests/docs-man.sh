#!/bin/sh
# The manual (issue 20): kanna(7) and kanna.yaml(5) are what doc/md2man.py
# makes of their Markdown today (a stale page fails); every man page renders
# without a groff warning; and every installed program has its page,
# --help and --version.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
command -v groff >/dev/null 2>&1 || { echo "SKIP: no groff (./quickstart deps installs groff-base)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok - $*"; }

# --- generated pages are current --------------------------------------------------------------
cd "$SRCDIR"
"$PY" doc/md2man.py kanna 7 "Miscellaneous" "$tmp/kanna.7" doc/kanna.7.md doc/observability.md \
	doc/metrics.md doc/kanna.7-files.md
"$PY" doc/md2man.py kanna.yaml 5 "File Formats" "$tmp/kanna.yaml.5" doc/configuration.md
for p in kanna.7 kanna.yaml.5; do
	cmp -s "$tmp/$p" "doc/$p" ||
		fail "doc/$p is stale: regenerate it with doc/md2man.py (see doc/local.mk): $(diff "doc/$p" "$tmp/$p" | head -n 10)"
done
ok "doc/kanna.7 and doc/kanna.yaml.5 match their Markdown"

# --- every page renders cleanly -----------------------------------------------------------------
pages=$(sed -n 's/.*dist_man_MANS += //p' Makefile.am */local.mk | tr ' ' '\n' | grep . | sort -u)
[ -n "$pages" ] || fail "no dist_man_MANS found"
for p in $pages; do
	[ -s "$p" ] || fail "$p is listed in dist_man_MANS but missing"
	w=$(groff -man -ww -z "$p" 2>&1) || fail "groff failed on $p: $w"
	[ -z "$w" ] || fail "groff warns on $p: $w"
done
ok "$(echo "$pages" | wc -l) man pages render without a warning"

# --- the installed programs -----------------------------------------------------------------------
cd "$BUILDDIR"
root=$tmp/root
make -s install DESTDIR="$root" >"$tmp/install.log" 2>&1 || fail "make install DESTDIR: $(tail -n 20 "$tmp/install.log")"
vars=$(printf 'print:\n\t@echo $(bindir) $(mandir) $(PACKAGE_VERSION)\n' | make -s -f Makefile -f - print)
# shellcheck disable=SC2086
set -- $vars
bindir=$1 mandir=$2 version=$3
n=0
for prog in "$root$bindir"/*; do
	name=$(basename "$prog")
	n=$((n + 1))
	[ -s "$root$mandir/man1/$name.1" ] || fail "$name is installed without its man page man1/$name.1"
	out=$("$prog" --version 2>&1) || fail "$name --version exited $?: $out"
	[ "$out" = "$name (kanna) $version" ] || fail "$name --version says '$out', want '$name (kanna) $version'"
	out=$("$prog" --help 2>&1) || fail "$name --help exited $?"
	echo "$out" | grep -q "^Usage: $name" || fail "$name --help does not start with its usage: $(echo "$out" | head -n 2)"
	echo "$out" | grep -q -- "--version" || fail "$name --help does not list --version"
done
[ "$n" -ge 6 ] || fail "only $n programs installed in $bindir"
for p in man7/kanna.7 man5/kanna.yaml.5; do
	[ -s "$root$mandir/$p" ] || fail "make install put no $p"
done
ok "$n installed programs: each has its man page, --help and --version; kanna(7) and kanna.yaml(5) installed"
