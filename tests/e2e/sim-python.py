"""kanna-sim driven by a client nobody here wrote: Kubernetes' official
Python client (Debian's python3-kubernetes). Run by tests/e2e/sim-python.sh
with KUBECONFIG pointing at the sim; prints "ok - ..." per check and exits
non-zero on the first mismatch."""
import sys
import threading
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NS = "py"


def ok(what):
    print("ok - " + what, flush=True)


def fail(what):
    print("FAIL: " + what, flush=True)
    sys.exit(1)


def expect_status(status, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except ApiException as e:
        if e.status != status:
            fail("%s: want HTTP %d, got %d: %s" % (fn.__name__, status, e.status, e.body))
        return e
    fail("%s: want HTTP %d, it succeeded" % (fn.__name__, status))


def wait_until(what, cond, seconds=30):
    end = time.time() + seconds
    while time.time() < end:
        if cond():
            return
        time.sleep(0.2)
    fail("timed out after %ds waiting for %s" % (seconds, what))


def main():
    config.load_kube_config()
    core, apps, custom = client.CoreV1Api(), client.AppsV1Api(), client.CustomObjectsApi()

    # CRUD, and 409 on an update from a stale resourceVersion.
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
    cm = core.create_namespaced_config_map(NS, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="a", labels={"app": "py", "tier": "one"}), data={"k": "1"}))
    stale = cm.metadata.resource_version
    got = core.read_namespaced_config_map("a", NS)
    if got.data != {"k": "1"}:
        fail("read back %r" % got.data)
    got.data = {"k": "2"}
    core.replace_namespaced_config_map("a", NS, got)
    got.data = {"k": "3"}
    got.metadata.resource_version = stale
    expect_status(409, core.replace_namespaced_config_map, "a", NS, got)
    ok("create, read, replace, and 409 Conflict on a stale resourceVersion")

    # Label and field selectors.
    core.create_namespaced_config_map(NS, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="b", labels={"app": "py", "tier": "two"})))
    names = lambda **kw: sorted(i.metadata.name for i in core.list_namespaced_config_map(NS, **kw).items)
    if names(label_selector="app=py") != ["a", "b"] or names(label_selector="tier in (two)") != ["b"] or \
            names(label_selector="tier!=two,app") != ["a"] or names(field_selector="metadata.name=b") != ["b"]:
        fail("selectors: %r %r %r" % (names(label_selector="app=py"), names(label_selector="tier in (two)"),
                                       names(field_selector="metadata.name=b")))
    page = core.list_namespaced_config_map(NS, limit=1)
    rest = core.list_namespaced_config_map(NS, limit=1, _continue=page.metadata._continue)
    if len(page.items) != 1 or len(rest.items) != 1 or page.items[0].metadata.name == rest.items[0].metadata.name:
        fail("paging with limit and continue")
    ok("label selectors (=, in, !=, exists), a field selector, and paging with limit/continue")

    # A watch from a resourceVersion (the client sends watch=True) sees what
    # comes after it, and only that.
    rv = core.list_namespaced_config_map(NS).metadata.resource_version
    seen = []

    def watch_them():
        w = watch.Watch()
        for ev in w.stream(core.list_namespaced_config_map, NS, resource_version=rv, timeout_seconds=10):
            seen.append((ev["type"], ev["object"].metadata.name))
            if ev["object"].metadata.name == "c" and ev["type"] == "DELETED":
                w.stop()

    t = threading.Thread(target=watch_them)
    t.start()
    time.sleep(0.5)
    core.create_namespaced_config_map(NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c")))
    core.delete_namespaced_config_map("c", NS)
    t.join(15)
    if seen != [("ADDED", "c"), ("DELETED", "c")]:
        fail("watch from resourceVersion %s saw %r" % (rv, seen))
    ok("a watch from a resourceVersion sees what came after it")

    # Finalizers hold a deletion until they are removed.
    core.create_namespaced_config_map(NS, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="held", finalizers=["example.com/hold"])))
    core.delete_namespaced_config_map("held", NS)
    held = core.read_namespaced_config_map("held", NS)
    if held.metadata.deletion_timestamp is None:
        fail("no deletionTimestamp on a deleted object with a finalizer")
    core.patch_namespaced_config_map("held", NS, {"metadata": {"finalizers": None}})
    wait_until("the object to go once its finalizer is removed",
               lambda: expect_status(404, core.read_namespaced_config_map, "held", NS) is not None, 10)
    ok("a finalizer holds the deletion; removing it completes it")

    # A Deployment whose pods fit nowhere: its pods turn Unschedulable.
    apps.create_namespaced_deployment(NS, client.V1Deployment(
        metadata=client.V1ObjectMeta(name="big"),
        spec=client.V1DeploymentSpec(
            replicas=2, selector=client.V1LabelSelector(match_labels={"app": "big"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "big"}),
                spec=client.V1PodSpec(containers=[client.V1Container(
                    name="c", image="pause",
                    resources=client.V1ResourceRequirements(requests={"cpu": "64"}))])))))

    def unschedulable():
        pods = core.list_namespaced_pod(NS, label_selector="app=big").items
        return len(pods) == 2 and all(
            any(c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
                for c in (p.status.conditions or [])) for p in pods)
    wait_until("the Deployment's two pods to be Unschedulable", unschedulable)
    ok("a Deployment's pods that fit nowhere are PodScheduled=False, Unschedulable")

    # A karpenter.sh/v1 NodePool round trip through the CRD.
    pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "py"},
            "spec": {"template": {"spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In",
                                  "values": ["spot"]}]}},
                     "limits": {"cpu": "100"}}}
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", pool)
    back = custom.get_cluster_custom_object("karpenter.sh", "v1", "nodepools", "py")
    if back["spec"]["limits"] != {"cpu": "100"} or \
            back["spec"]["template"]["spec"]["requirements"][0]["values"] != ["spot"]:
        fail("NodePool read back as %r" % back["spec"])
    if "py" not in [i["metadata"]["name"] for i in
                    custom.list_cluster_custom_object("karpenter.sh", "v1", "nodepools")["items"]]:
        fail("the NodePool is not listed")
    custom.delete_cluster_custom_object("karpenter.sh", "v1", "nodepools", "py")
    wait_until("the NodePool to go", lambda: expect_status(
        404, custom.get_cluster_custom_object, "karpenter.sh", "v1", "nodepools", "py") is not None, 10)
    ok("a karpenter.sh/v1 NodePool created, read, listed and deleted")


main()
