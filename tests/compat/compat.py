#!/usr/bin/python3
"""Karpenter's published examples against kanna (issue 16's measure).

Applies every example of tests/compat/upstream/{v1,v1beta1,v1alpha5} to a
running kanna-sim with real kubectl (each object renamed so that the
examples live side by side: NAME -> <version>-<file>-NAME), gives each
NodePool / Provisioner one small pod that only it can take, and records,
per example: the API server's verdict, the node classes' and pools'
conditions, and what kanna launched for the pod (instance type and
capacity type checked against the pool's requirements with the catalog,
the image and its family, the launch template's user data, block devices
and metadata options). Each outcome is compared with tests/compat/expected.txt,
which says what upstream Karpenter does with the example and, where kanna
differs, names the exception and its reason.

usage: compat.py SRCDIR OUT.json VERSION...   (KUBECONFIG and AWS_ENDPOINT_URL set)
"""
import base64
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

import yaml

VERSIONS = {"v1": "v1", "v1beta1": "b1", "v1alpha5": "a5"}
CLUSTER = "kanna"
WAIT_S = float(os.environ.get("COMPAT_WAIT_S", "180"))
SETTLE_S = float(os.environ.get("COMPAT_SETTLE_S", "25"))


def kubectl(*args, stdin=None, check=True):
    p = subprocess.run(["kubectl", *args], input=stdin, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError("kubectl %s: %s" % (" ".join(args), p.stderr.strip()))
    return p


def kget(kind):
    return json.loads(kubectl("get", kind, "-o", "json").stdout)["items"]


def sim(path):
    with urllib.request.urlopen(os.environ["AWS_ENDPOINT_URL"] + path, timeout=10) as r:
        return json.load(r)


class Example:
    def __init__(self, srcdir, version, path):
        self.version, self.path = version, path
        self.key = "%s/%s" % (version, os.path.basename(path))
        stem = os.path.splitext(os.path.basename(path))[0].lower()
        self.prefix = "%s-%s" % (VERSIONS[version], re.sub(r"[^a-z0-9-]", "-", stem))
        with open(path) as f:
            # The examples name the cluster ${CLUSTER_NAME} or my-cluster
            # ("replace with your cluster name"): kanna-sim's is kanna.
            text = f.read().replace("${CLUSTER_NAME}", CLUSTER).replace("my-cluster", CLUSTER)
        self.docs = [d for d in yaml.safe_load_all(text) if d]
        self.pools, self.classes = [], []
        for d in self.docs:
            kind, name = d["kind"], d["metadata"]["name"]
            d["metadata"]["name"] = self.rename(name)
            if kind in ("NodePool", "Provisioner"):
                self.pools.append((kind, d))
                spec = d["spec"]
                ref = spec.get("providerRef") or (spec.get("template", {}).get("spec", {}).get("nodeClassRef"))
                if ref and "name" in ref:
                    ref["name"] = self.rename(ref["name"])
            else:
                self.classes.append((kind, d))
        self.result = {"example": self.key, "objects": ["%s/%s" % (k, d["metadata"]["name"]) for k, d in self.pools + self.classes]}

    def rename(self, name):
        return "%s-%s" % (self.prefix, name)

    def apply(self):
        p = kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(self.docs), check=False)
        self.result["apply"] = "accepted" if p.returncode == 0 else "refused"
        if p.returncode:
            self.result["apply_error"] = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "exit %d" % p.returncode


def pod_for(kind, pool):
    name = pool["metadata"]["name"]
    label = "karpenter.sh/provisioner-name" if kind == "Provisioner" else "karpenter.sh/nodepool"
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "compat-" + name, "namespace": "default", "labels": {"app": "compat", "pool": name}},
        "spec": {
            "nodeSelector": {label: name},
            "tolerations": [{"operator": "Exists"}],
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "c", "image": "pause",
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}],
        },
    }


def conditions(obj):
    return {c["type"]: ("%s %s %s" % (c.get("status", ""), c.get("reason", ""), c.get("message", ""))).strip()
            for c in (obj.get("status") or {}).get("conditions", [])}


# --- what upstream would launch: the pool's requirements against the catalog ---

def catalog(srcdir):
    """Instance type name -> its well-known labels (the shipped catalog)."""
    with open(os.path.join(srcdir, "data", "instance-types.json")) as f:
        return {t["name"]: t["labels"] for t in json.load(f)["instanceTypes"]}


def satisfies(labels, reqs):
    """The requirements (In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte)
    a launched node's labels violate, for keys the node has a label for."""
    bad = []
    for r in reqs:
        key, op, vals = r["key"], r["operator"], r.get("values") or []
        if key not in labels:
            continue
        v = labels[key]
        ok = {
            "In": lambda: v in vals,
            "NotIn": lambda: v not in vals,
            "Exists": lambda: True,
            "DoesNotExist": lambda: False,
            "Gt": lambda: v.isdigit() and int(v) > int(vals[0]),
            "Lt": lambda: v.isdigit() and int(v) < int(vals[0]),
            "Gte": lambda: v.isdigit() and int(v) >= int(vals[0]),
            "Lte": lambda: v.isdigit() and int(v) <= int(vals[0]),
        }[op]()
        if not ok:
            bad.append("%s %s %s (node: %s)" % (key, op, vals, v))
    return bad


def pool_requirements(kind, pool):
    spec = pool["spec"]
    if kind == "Provisioner":
        return spec.get("requirements", [])
    return spec.get("template", {}).get("spec", {}).get("requirements", [])


# --- what kanna launched ---

def image_family(name):
    n = (name or "").lower()
    for pat, fam in (("bottlerocket", "Bottlerocket"), ("windows_server-2019", "Windows2019"),
                     ("windows_server-2022", "Windows2022"), ("windows_server-2025", "Windows2025"),
                     ("ubuntu", "Ubuntu"), ("al2023", "AL2023"), ("amazon-linux-2023", "AL2023"),
                     ("amazon-eks", "AL2")):
        if pat in n:
            return fam
    return "unknown(%s)" % name


def userdata_kind(ud):
    if "<powershell>" in ud:
        return "powershell"
    if "application/node.eks.aws" in ud:
        return "nodeadm"
    if "[settings.kubernetes]" in ud:
        return "bottlerocket-toml"
    if "/etc/eks/bootstrap.sh" in ud:
        return "bootstrap.sh"
    return "other"


def launched(claim, instances, templates):
    st = claim.get("status") or {}
    iid = (st.get("providerID") or "").rsplit("/", 1)[-1]
    inst = instances.get(iid)
    out = {"nodeclaim": claim["metadata"]["name"], "instanceType": claim["metadata"].get("labels", {}).get("node.kubernetes.io/instance-type")}
    if not inst:
        return out
    out.update({"instanceId": iid, "instanceType": inst["instanceType"], "capacityType": inst["capacityType"],
                "image": inst.get("imageName"), "family": image_family(inst.get("imageName"))})
    lt = templates.get(inst.get("launchTemplateId"))
    if lt:
        d = lt["launchTemplateData"]
        ud = base64.b64decode(d.get("UserData", "")).decode("utf-8", "replace")
        out["userDataKind"] = userdata_kind(ud)
        out["userData"] = ud
        out["blockDevices"] = sorted("%s %s %s" % (d.get(k + ".DeviceName"), d.get(k + ".Ebs.VolumeSize", "-"), d.get(k + ".Ebs.VolumeType", "-"))
                                     for k in {m.group(0) for m in (re.match(r"BlockDeviceMapping\.\d+", x) for x in d) if m})
        out["metadataOptions"] = {k.split(".", 1)[1]: v for k, v in d.items() if k.startswith("MetadataOptions.")}
    return out


def main():
    srcdir, out_path, versions = sys.argv[1], sys.argv[2], sys.argv[3:]
    examples = []
    for version in versions:
        d = os.path.join(srcdir, "tests", "compat", "upstream", version)
        for f in sorted(os.listdir(d)):
            if f.endswith(".yaml"):
                examples.append(Example(srcdir, version, os.path.join(d, f)))
    for e in examples:
        e.apply()
    pods = [pod_for(k, p) for e in examples if e.result["apply"] == "accepted" for k, p in e.pools]
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(pods))

    # Wait until every pool has a launched NodeClaim, or no pool got one
    # for SETTLE_S, or the time is up (a pool kanna refuses, or one whose
    # class is not Ready, never gets one).
    want = {p["metadata"]["name"] for e in examples if e.result["apply"] == "accepted" for _, p in e.pools}
    deadline = time.time() + WAIT_S
    settled, last = time.time() + SETTLE_S, 0
    while True:
        claims = kget("nodeclaims")
        have = {}
        for c in claims:
            lab = c["metadata"].get("labels", {})
            pool = lab.get("karpenter.sh/nodepool") or lab.get("karpenter.sh/provisioner-name")
            if (c.get("status") or {}).get("providerID"):
                have.setdefault(pool, c)
        if len(have) != last:
            settled, last = time.time() + SETTLE_S, len(have)
        if want <= set(have) or time.time() > min(deadline, settled):
            break
        time.sleep(2)

    instances = {i["instanceId"]: i for i in sim("/_sim/status").get("instances", [])}
    templates = {t["launchTemplateId"]: t for t in sim("/_sim/launch-templates")}
    cat = catalog(srcdir)
    objs = {}
    for kind in ("nodepools.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws", "provisioners.karpenter.sh",
                 "awsnodetemplates.karpenter.k8s.aws"):
        for o in kget(kind):
            objs[(o["kind"], o["metadata"]["name"])] = o
    events = kget("events")
    for e in examples:
        r = e.result
        r["conditions"] = {}
        for kind, d in e.pools + e.classes:
            o = objs.get((kind, d["metadata"]["name"]))
            if o is not None and conditions(o):
                r["conditions"]["%s/%s" % (kind, d["metadata"]["name"])] = conditions(o)
        r["launched"] = {}
        for kind, p in e.pools:
            name = p["metadata"]["name"]
            c = have.get(name)
            if not c:
                why = [ev.get("reason", "") + " " + ev.get("message", "") for ev in events
                       if ev.get("involvedObject", {}).get("name") == "compat-" + name]
                r["launched"][name] = {"none": why[-1] if why else "no NodeClaim"}
                continue
            got = launched(c, instances, templates)
            t = cat.get(got.get("instanceType"))
            if t:
                # The OS is the node's (the catalog says linux for every type).
                labels = dict(t, **{"karpenter.sh/capacity-type": got.get("capacityType")})
                labels.pop("kubernetes.io/os", None)
                node_os = c["metadata"].get("labels", {}).get("kubernetes.io/os")
                if node_os:
                    labels["kubernetes.io/os"] = got["os"] = node_os
                got["violates"] = satisfies(labels, pool_requirements(kind, p))
            r["launched"][name] = got
    with open(out_path, "w") as f:
        json.dump([e.result for e in examples], f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
