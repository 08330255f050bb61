"""The disruption-budget invariant of the chaos test, for chaos_invariants.py.

disruption-budget-exceeded: whenever kanna-reaper began to disrupt a node
(the sim's timeline shows it tainted karpenter.sh/disrupted or being
deleted), the nodes of its NodePool being disrupted then, this one
included, were no more than the pool's budgets allowed. As Karpenter's
BuildDisruptionBudgetMapping (kubernetes-sigs/karpenter
pkg/controllers/disruption/helpers.go) counts them: the total is the
pool's initialized nodes (here: Ready once and not yet deleted), a
percentage is of that total rounded up
(intstr.GetScaledValueFromIntOrPercent(..., roundUp=true)), several
budgets give their minimum, and a pool with none has Karpenter's default
of nodes: 10% (a v1alpha5 Provisioner included, as kanna converts it).

A node stops counting once it is deleted, or untainted without being
deleted (a disruption given up). Not counted: nodes the test deleted by
hand (Checker.operator_deleted; Karpenter counts them against the budget,
so kanna holds back for them, but they are not its disruptions) and nodes
never Ready (Karpenter skips uninitialized nodes). Budgets with a schedule
or with reasons are left out, since the timeline shows neither the time
window nor a disruption's reason: the check uses the budgets that bind
every reason at every moment, so it never flags what Karpenter allows.
It is checked when a disruption begins, the moment kanna decides: later
the total may shrink under it (a node an operator deleted) without kanna
doing anything.
"""
import math

DEFAULT_BUDGET = "10%"
DISRUPTED_TAINT = "karpenter.sh/disrupted"


def budget_nodes(budgets, total):
    """The number of nodes the budgets allow disrupting at once (None: any)."""
    allowed = None
    for b in budgets:
        if b.get("schedule") or b.get("reasons"):
            continue
        nodes = str(b.get("nodes", DEFAULT_BUDGET))
        n = math.ceil(int(nodes[:-1]) * total / 100) if nodes.endswith("%") else int(nodes)
        allowed = n if allowed is None else min(allowed, n)
    return allowed


def pool_budgets(pool):
    if pool.get("kind") == "Provisioner":
        return [{"nodes": DEFAULT_BUDGET}]
    budgets = ((pool.get("spec") or {}).get("disruption") or {}).get("budgets")
    return budgets if budgets else [{"nodes": DEFAULT_BUDGET}]


def node_pool(parts, labels):
    for p in parts[1:]:
        if p.startswith("nodepool="):
            return p.split("=", 1)[1]
    return (labels or {}).get("karpenter.sh/nodepool")


def check_budgets(c):
    nodes = {}  # name -> {"pool", "ready", "disrupting"}
    for e in c.timeline:
        ev, parts = e["event"], e["detail"].split(" ")
        name = parts[0]
        if ev == "node-registered":
            labels = (c.nodes.get(name) or {}).get("metadata", {}).get("labels")
            nodes[name] = {"pool": node_pool(parts, labels), "ready": False, "disrupting": False}
            continue
        n = nodes.get(name)
        if n is None:
            continue
        if ev == "node-ready":
            n["ready"] = True
        elif ev == "node-deleted":
            del nodes[name]
        elif ev == "node-untainted" and len(parts) > 1 and parts[1].startswith(DISRUPTED_TAINT + ":"):
            n["disrupting"] = n.get("deleting", False)
        elif ev in ("node-deleting", "node-tainted"):
            if ev == "node-deleting":
                n["deleting"] = True
            elif len(parts) < 2 or not parts[1].startswith(DISRUPTED_TAINT + ":"):
                continue
            if n["disrupting"] or not n["ready"] or name in c.operator_deleted or not n["pool"]:
                continue
            n["disrupting"] = True
            pool = c.pools.get(n["pool"])
            if pool is None:
                continue
            mine = [m for m, x in nodes.items() if x["pool"] == n["pool"]]
            total = sum(1 for m in mine if nodes[m]["ready"])
            busy = sorted(m for m in mine if nodes[m]["disrupting"])
            allowed = budget_nodes(pool_budgets(pool), total)
            if allowed is not None and len(busy) > allowed:
                c.violate("disruption-budget-exceeded", name,
                          "node %s of NodePool %s began disruption (%s) at %s with %d of its %d "
                          "node(s) disrupting (%s), over its budgets' %d"
                          % (name, n["pool"], ev, e["time"], len(busy), total, " ".join(busy),
                             allowed))
