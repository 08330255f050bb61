#!/usr/bin/python3
"""The field table of Karpenter's CRDs (issue 16): every field of every
supported CRD version with kanna's support.

  data/crds/*.yaml     the CRDs kanna ships; each storage version counts
                       (a v1beta1 file's v1 is the v1 file's, older)
  doc/crd-support.tsv  kind, versions (comma-separated), path, support, note;
                       a path ending in '*' covers its whole subtree, the
                       longest match wins; a key under an open object
                       (x-kubernetes-preserve-unknown-fields) may be named
  doc/crd-fields.md    generated from the two

  crd-fields.py [--srcdir DIR] list    every CRD path with its type
  crd-fields.py [--srcdir DIR] write   regenerates doc/crd-fields.md
  crd-fields.py [--srcdir DIR] check   fails naming each path without a row,
                                       row without a path, field the decoder
                                       refuses not classified refused, or a
                                       stale doc/crd-fields.md
"""
import argparse
import difflib
import glob
import os
import re
import sys

import yaml

SPEC_SUPPORT = ("honoured", "refused", "ignored")
STATUS_SUPPORT = ("written", "not-written")
# The node classes the decoder's unsupported_*_fields lists apply to, and
# where (decode/decode-nodeclass.c: unsupported_fields()).
REFUSING = {("EC2NodeClass", "v1"): "spec", ("EC2NodeClass", "v1beta1"): "spec",
            ("AWSNodeTemplate", "v1alpha1"): "spec", ("Provisioner", "v1alpha5"): "spec.provider"}
# Where older pools keep kubelet settings the kubelet list refuses too
# (decode/decode-nodepool.c).
KUBELET_REFUSING = {("NodePool", "v1beta1"): "spec.template.spec.kubelet",
                    ("Provisioner", "v1alpha5"): "spec.kubeletConfiguration"}


def schema_type(s):
    if s.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    if "type" in s:
        if s["type"] == "object" and "additionalProperties" in s and "properties" not in s:
            return "map"
        return s["type"]
    return "any"


def crd_paths(srcdir):
    """{(kind, version): {path: (type, open)}} for each storage version."""
    out = {}
    for f in sorted(glob.glob(os.path.join(srcdir, "data/crds/*.yaml"))):
        with open(f) as fh:
            docs = list(yaml.safe_load_all(fh))
        for d in docs:
            if not d or d.get("kind") != "CustomResourceDefinition":
                continue
            kind = d["spec"]["names"]["kind"]
            for v in d["spec"]["versions"]:
                if not v.get("storage"):
                    continue
                paths = out.setdefault((kind, v["name"]), {})

                def walk(s, p):
                    paths[p] = (schema_type(s), bool(s.get("x-kubernetes-preserve-unknown-fields"))
                                and not s.get("properties"))
                    for k, c in (s.get("properties") or {}).items():
                        walk(c, p + "." + k)
                    if isinstance(s.get("items"), dict):
                        walk(s["items"], p + "[]")
                    if isinstance(s.get("additionalProperties"), dict):
                        walk(s["additionalProperties"], p + "{}")

                props = v["schema"]["openAPIV3Schema"].get("properties", {})
                for top in ("spec", "status"):
                    if top in props:
                        walk(props[top], top)
    return out


def read_rows(srcdir):
    rows = []
    with open(os.path.join(srcdir, "doc/crd-support.tsv")) as fh:
        for n, line in enumerate(fh, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            f = line.split("\t")
            if len(f) != 5:
                sys.exit(f"doc/crd-support.tsv:{n}: expected 5 tab-separated fields, got {len(f)}")
            kind, versions, path, support, note = f
            for v in versions.split(","):
                rows.append(dict(line=n, kind=kind, version=v, path=path, support=support, note=note))
    return rows


def under(path, prefix):
    return path == prefix or (path.startswith(prefix) and path[len(prefix)] in ".[{")


def open_key(paths, path):
    """The open object or map a path names a key of (spec.kubelet.maxPods → spec.kubelet)."""
    for p, (_, is_open) in paths.items():
        if (is_open or p + "{}" in paths) and path.startswith(p + ".") and not re.search(r"[.\[{]", path[len(p) + 1:]):
            return p
    return None


def lookup(rows, path):
    """The row classifying path: exact, else the longest prefix rule."""
    best = None
    for r in rows:
        p = r["path"]
        if p == path:
            return r
        if p.endswith("*") and under(path, p[:-1]) and (best is None or len(p) > len(best["path"])):
            best = r
    return best


def table(srcdir):
    """[(kind, version, [(path, type, row)])] with the rows' own extra keys."""
    crds = crd_paths(srcdir)
    rows = read_rows(srcdir)
    out = []
    for (kind, version), paths in sorted(crds.items()):
        mine = [r for r in rows if r["kind"] == kind and r["version"] == version]
        entries = [(p, t, lookup(mine, p)) for p, (t, _) in paths.items()]
        for r in mine:
            if r["path"] not in paths and not r["path"].endswith("*") and open_key(paths, r["path"]):
                entries.append((r["path"], "(key)", r))
        entries.sort(key=lambda e: e[0])
        out.append((kind, version, entries))
    return crds, rows, out


def cell(s):
    return s.replace("|", "\\|")


def render(srcdir):
    _, _, tab = table(srcdir)
    kinds = SPEC_SUPPORT + STATUS_SUPPORT
    o = ["# Karpenter's CRD fields in kanna", "",
         "<!-- Generated by tools/crd-fields.py from data/crds/*.yaml and doc/crd-support.tsv;",
         "     edit the TSV and run `tools/crd-fields.py write`. tests/crd-fields.sh fails when stale. -->",
         "",
         "Every field of every Karpenter CRD version kanna reads (the storage version of each file",
         "in `data/crds/`), with what kanna does with it:", "",
         "- **honoured**: read and acted on (scheduling, launch template, user data, disruption);",
         "- **refused**: an object setting it is not acted on, and a status condition or",
         "  Event names the field (the node class's `ValidationSucceeded`, the NodePool's);",
         "- **ignored**: accepted and not acted on — the note says why. An ignored field with",
         "  no warning breaks the rule that nothing is dropped silently: each is listed below;",
         "- **written** / **not-written**: a status field kanna writes, or leaves unset.", "",
         "`[]` is a list's item, `{}` a map's value; a `(key)` row names a key of an object",
         "or map the CRD leaves open; a path ending in `*` below is a whole subtree.", "", "## Summary", "",
         "| kind | version | fields | " + " | ".join(kinds) + " |",
         "|---|---|---:|" + "---:|" * len(kinds)]
    for kind, version, entries in tab:
        counts = [sum(1 for e in entries if e[2] and e[2]["support"] == k) for k in kinds]
        o.append(f"| {kind} | {version} | {len(entries)} | " + " | ".join(map(str, counts)) + " |")
    o += ["", "## Ignored fields", "",
          "Set in an object, these change nothing and nothing says so (issue 16):", ""]
    for kind, version, entries in tab:
        seen = set()
        for p, _, r in entries:
            if r and r["support"] == "ignored" and id(r) not in seen:
                seen.add(id(r))
                o.append(f"- {kind} {version} `{r['path']}`: {r['note']}")
    for kind, version, entries in tab:
        o += ["", f"## {kind} {version}", "", "| path | type | support | note |", "|---|---|---|---|"]
        prev = None
        for p, t, r in entries:
            # a subtree's rule is noted on its first field only
            note = "″" if r is not None and r is prev else cell(r["note"]) if r else ""
            o.append(f"| `{p}` | {t} | {r['support'] if r else '?'} | {note} |")
            prev = r
    return "\n".join(o) + "\n"


def refused_lists(srcdir):
    """The decoder's refusal lists, by name: unsupported_{spec,ebs}_fields
    (decode/decode-nodeclass.c) and decode_kubelet_unsupported_fields
    (decode/decode.c, shared by node classes and older pools' kubelets)."""
    lists = {}
    for f, pat in (("decode/decode-nodeclass.c", r"unsupported_(spec|ebs)_fields\[\]\s*=\s*\{(.*?)\}"),
                   ("decode/decode.c", r"decode_(kubelet)_unsupported_fields\[\]\s*=\s*\{(.*?)\}")):
        with open(os.path.join(srcdir, f)) as fh:
            text = fh.read()
        for m in re.finditer(pat, text, re.S):
            lists[m.group(1)] = re.findall(r'"([^"]+)"', m.group(2))
    if set(lists) != {"spec", "ebs", "kubelet"}:
        sys.exit(f"decode/: the refusal lists were not all found ({sorted(lists)})")
    return lists


def check(srcdir):
    crds, rows, tab = table(srcdir)
    errs = []
    for r in rows:
        paths = crds.get((r["kind"], r["version"]))
        where = f"doc/crd-support.tsv:{r['line']}"
        if paths is None:
            errs.append(f"{where}: {r['kind']} {r['version']} is no CRD version of data/crds/")
            continue
        p = r["path"]
        if p.endswith("*"):
            if not any(under(q, p[:-1]) for q in paths):
                errs.append(f"{where}: {r['kind']} {r['version']} has no field under {p}")
        elif p not in paths and not open_key(paths, p):
            errs.append(f"{where}: {r['kind']} {r['version']} has no field {p}")
        allowed = STATUS_SUPPORT if p.startswith("status") else SPEC_SUPPORT
        if r["support"] not in allowed:
            errs.append(f"{where}: {p}: support '{r['support']}' is not one of {', '.join(allowed)}")
        if not r["note"].strip():
            errs.append(f"{where}: {p}: the note says how or why")
    for kind, version, entries in tab:
        for p, _, r in entries:
            if r is None:
                errs.append(f"{kind} {version}: {p} has no row in doc/crd-support.tsv")
    lists = refused_lists(srcdir)
    for kind, version in set(REFUSING) | set(KUBELET_REFUSING):
        paths = crds.get((kind, version), {})
        mine = [r for r in rows if r["kind"] == kind and r["version"] == version]
        wanted = []
        if (kind, version) in REFUSING:
            prefix = REFUSING[(kind, version)]
            wanted += [f"{prefix}.{f}" for f in lists["spec"]]
            wanted += [f"{prefix}.blockDeviceMappings[].ebs.{f}" for f in lists["ebs"]]
            wanted += [f"{prefix}.kubelet.{f}" for f in lists["kubelet"]]
            # any other key of an open kubelet map (unsupported_fields())
            wanted.append(f"{prefix}.kubelet{{}}")
        if (kind, version) in KUBELET_REFUSING:
            wanted += [f"{KUBELET_REFUSING[(kind, version)]}.{f}" for f in lists["kubelet"]]
        for r in mine:
            if r["support"] == "refused" and r["path"].rstrip("*") not in wanted:
                errs.append(f"doc/crd-support.tsv:{r['line']}: {kind} {version}: {r['path']} is "
                            "classified refused but the decoder does not refuse it")
        for p in wanted:
            if p not in paths and not open_key(paths, p):
                continue  # not in this version's schema: the API server prunes it
            r = lookup(mine, p)
            if not r or r["support"] != "refused":
                errs.append(f"{kind} {version}: {p} is refused by the decoder "
                            f"but classified {r['support'] if r else 'nowhere'}")
    md = os.path.join(srcdir, "doc/crd-fields.md")
    try:
        with open(md) as fh:
            current = fh.read()
    except FileNotFoundError:
        current = None
    fresh = render(srcdir)
    if current != fresh:
        diff = difflib.unified_diff((current or "").splitlines(), fresh.splitlines(),
                                    "doc/crd-fields.md", "rendered", n=0, lineterm="")
        errs.append("doc/crd-fields.md is stale: run tools/crd-fields.py write\n"
                    + "\n".join(list(diff)[:12]))
    for e in errs:
        print("FAIL:", e)
    return 1 if errs else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--srcdir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("command", choices=("list", "write", "check"))
    a = ap.parse_args()
    if a.command == "list":
        for (kind, version), paths in sorted(crd_paths(a.srcdir).items()):
            for p, (t, is_open) in paths.items():
                print(f"{kind}\t{version}\t{p}\t{t}{' (open)' if is_open else ''}")
    elif a.command == "write":
        with open(os.path.join(a.srcdir, "doc/crd-fields.md"), "w") as fh:
            fh.write(render(a.srcdir))
    else:
        sys.exit(check(a.srcdir))


if __name__ == "__main__":
    main()
