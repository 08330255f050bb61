#!/usr/bin/python3
"""bench/collect.py: gathers the rows the benchmark scripts wrote (bench/lib.sh,
one JSON line each, ROWS_DIR/NAME.jsonl beside NAME.seconds and NAME.rc)
into bench/results.json, merging into the file there (a bench run alone
replaces only its own entry), checks it against bench/results.schema.json
and bench/figures.txt, and prints one table of the benches collected.

  collect.py ROWS_DIR RESULTS [--quick]   collect, check, print
  collect.py --check RESULTS NAME...      check only: the schema, and every
                                          figure of each NAME present with a value
Exit 1 when a check fails (the file is written all the same)."""
import datetime
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def machine():
    model, mem_kb = "unknown", 0
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    return {"cores": os.cpu_count(), "model": model, "memory_mb": mem_kb // 1024}


def commit():
    git = ["git", "-C", os.path.dirname(HERE)]
    try:
        head = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(git + ["status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def read_figures(path=os.path.join(HERE, "figures.txt")):
    """{bench: [figure names]} from lines "BENCH<TAB>FIGURE" ('#' comments)."""
    want = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            bench, _, figure = line.partition("\t")
            want.setdefault(bench, []).append(figure)
    return want


def check(results, names):
    """Problems: the schema's, and figures of NAMES missing or without a value."""
    import jsonschema

    with open(os.path.join(HERE, "results.schema.json")) as f:
        schema = json.load(f)
    problems = [f"schema: {'/'.join(map(str, e.path))}: {e.message}"
                for e in jsonschema.Draft7Validator(schema).iter_errors(results)]
    want = read_figures()
    for name in names:
        bench = results.get("benches", {}).get(name)
        if bench is None:
            problems.append(f"{name}: no entry")
            continue
        got = {fig.get("name"): fig for fig in bench.get("figures", [])}
        for figure in want.get(name, []):
            if figure not in got:
                problems.append(f"{name}: figure missing: {figure}")
            elif not isinstance(got[figure].get("value"), (int, float)):
                problems.append(f"{name}: figure without a value: {figure}")
        if not want.get(name):
            problems.append(f"{name}: no figures listed in bench/figures.txt")
    return problems


def show(x):
    return "-" if x is None else f"{x:g}" if isinstance(x, float) else str(x)


def table(results, names):
    print(f"{'bench':<9} {'figure':<70} {'value':>12} {'unit':<10} {'target':>10} {'ratio':>7}"
          f" {'karpenter':>10} {'k-ratio':>7}")
    for name in names:
        bench = results["benches"][name]
        for fig in bench["figures"]:
            k = fig["karpenter"] or {}
            print(f"{name:<9} {fig['name'][:70]:<70} {show(fig['value']):>12} {fig['unit']:<10} "
                  f"{show(fig['target']):>10} {show(fig['ratio']):>7} {show(k.get('value')):>10} "
                  f"{show(k.get('ratio')):>7}")
    print("(ratio: against the target, > 1 is better than the target; k-ratio: against Karpenter's"
          " published figure, > 1 is better than Karpenter; both target/ours for lower-is-better)")


def collect(rows_dir, out, quick):
    try:
        with open(out) as f:
            results = json.load(f)
    except (OSError, ValueError):
        results = {}
    results.update({"machine": machine(), "date": datetime.datetime.now(datetime.timezone.utc)
                    .strftime("%Y-%m-%dT%H:%M:%SZ"), "commit": commit()})
    results.setdefault("benches", {})
    names = sorted(f[:-len(".jsonl")] for f in os.listdir(rows_dir) if f.endswith(".jsonl"))
    for name in names:
        base = os.path.join(rows_dir, name)
        with open(base + ".jsonl") as f:
            figures = [json.loads(line) for line in f if line.strip()]
        with open(base + ".seconds") as f:
            seconds = float(f.read())
        with open(base + ".rc") as f:
            rc = int(f.read())
        results["benches"][name] = {"seconds": seconds, "date": results["date"], "commit": results["commit"],
                                    "quick": quick, "exit_status": rc, "figures": figures}
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")
    os.replace(tmp, out)
    table(results, names)
    if quick:
        print("(KANNA_BENCH_QUICK=1: shrunk sizes; the figures check the pipeline and measure nothing)")
    problems = check(results, names)
    problems += [f"{n}: exited {results['benches'][n]['exit_status']}" for n in names
                 if results["benches"][n]["exit_status"] != 0]
    for p in problems:
        print("bench:", p, file=sys.stderr)
    print(f"results: {out}")
    return 1 if problems else 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "--check":
        with open(argv[2]) as f:
            problems = check(json.load(f), argv[3:])
        for p in problems:
            print(p, file=sys.stderr)
        return 1 if problems else 0
    if len(argv) in (3, 4) and argv[3:] in ([], ["--quick"]):
        return collect(argv[1], argv[2], argv[3:] == ["--quick"])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
