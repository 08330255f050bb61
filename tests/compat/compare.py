#!/usr/bin/python3
"""Compares what kanna did with Karpenter's examples (compat.py's JSON
files) with tests/compat/expected.txt, prints one row per example and the
count, and fails on any difference.

expected.txt, one example a line (# starts a comment):
    VERSION/FILE  OUTCOME  [CHECK...]  [# why; "EXCEPTION: ..." where kanna differs from upstream]
OUTCOME: launched (every pool of the example got a node), refused (the API
server refused the manifest), not-ready:REASON (a node class or pool of it
says Ready=False with REASON, and no pool launched).
CHECK, on every launched pool: family=AL2023 (the image's AMI family),
userdata=nodeadm|bootstrap.sh|bottlerocket-toml|powershell|other,
userdata~=TEXT (the user data contains TEXT; %20 for a space),
capacity=spot|on-demand, os=linux|windows, hop-limit=N (the launch
template's MetadataOptions.HttpPutResponseHopLimit), blockdev~=TEXT (a
block device "DEVICE SIZE TYPE" contains TEXT). Every launched instance
type must also satisfy its pool's requirements (always checked).

usage: compare.py EXPECTED RESULTS.json...
"""
import json
import sys


def outcome(r):
    if r.get("apply") != "accepted":
        return "refused"
    launched = r.get("launched", {})
    if launched and all("instanceId" in l for l in launched.values()):
        return "launched"
    for obj in sorted(r.get("conditions", {})):
        ready = r["conditions"][obj].get("Ready", "")
        if ready.startswith("False "):
            return "not-ready:" + ready.split(" ")[1]
    return "no-launch"


def check(c, l):
    """The failure of CHECK c on launched pool l, or None."""
    key, op, want = (c.partition("~=")[0], "~=", c.partition("~=")[2]) if "~=" in c else (c.partition("=")[0], "=", c.partition("=")[2])
    want = want.replace("%20", " ")
    got = {
        "family": l.get("family"),
        "userdata": l.get("userData") if op == "~=" else l.get("userDataKind"),
        "capacity": l.get("capacityType"),
        "os": l.get("os"),
        "hop-limit": (l.get("metadataOptions") or {}).get("HttpPutResponseHopLimit"),
        "blockdev": "\n".join(l.get("blockDevices") or []),
    }.get(key, KeyError)
    if got is KeyError:
        return "unknown check %r" % key
    ok = (want in (got or "")) if op == "~=" else (got == want)
    return None if ok else "%s: got %r" % (c, got if op == "=" else (got or "")[:80])


def main():
    expected = {}
    with open(sys.argv[1]) as f:
        for n, line in enumerate(f, 1):
            text, _, comment = line.partition("#")
            words = text.split()
            if not words:
                continue
            if len(words) < 2:
                sys.exit("%s:%d: want VERSION/FILE OUTCOME [CHECK...]" % (sys.argv[1], n))
            expected[words[0]] = (words[1], words[2:], "EXCEPTION" in comment, comment.strip())
    results = {}
    for path in sys.argv[2:]:
        with open(path) as f:
            for r in json.load(f):
                results[r["example"]] = r

    bad = 0
    exceptions = []
    for key in sorted(set(expected) | set(results)):
        r = results.get(key)
        if key not in expected:
            print("%-48s %-24s NOT IN expected.txt" % (key, outcome(r)))
            bad += 1
            continue
        want, checks, exception, comment = expected[key]
        if r is None:
            print("%-48s %-24s NOT RUN" % (key, want))
            bad += 1
            continue
        got = outcome(r)
        problems = [] if got == want else ["outcome %s, expected %s" % (got, want)]
        for name, l in r.get("launched", {}).items():
            if "instanceId" not in l:
                continue
            if l.get("violates"):
                problems.append("%s violates its requirements: %s" % (name, "; ".join(l["violates"])))
            problems += ["%s %s" % (name, p) for p in (check(c, l) for c in checks) if p]
        if exception:
            exceptions.append((key, comment))
        print("%-48s %-24s %s" % (key, got, "ok" if not problems else "DIFFERS: " + "; ".join(problems)))
        bad += bool(problems)
    print()
    print("%d examples: %d as expected, %d differ; %d handled as upstream does, %d exceptions:" % (
        len(expected), len(expected) - bad, bad, len(expected) - len(exceptions), len(exceptions)))
    for key, comment in exceptions:
        print("  %s: %s" % (key, comment.split("EXCEPTION:", 1)[1].strip()))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
