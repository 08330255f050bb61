#!/usr/bin/env python3
"""Static checks of deploy/Containerfile against a `make install DESTDIR=`
tree, for tests/e2e/deploy-manifests.sh (no image can be built or pulled
where the tests run):
  - every `COPY --from=build /out/...` source was installed;
  - every shared library the copied programs load (ldd) belongs (dpkg -S) to
    a package the runtime stage installs, one those depend on (Depends,
    Pre-Depends, recursively, as apt installs them), or one of the base
    image's (Debian's Essential and Priority: required packages, which
    debian:bookworm-slim holds);
  - the last stage's last USER is numeric and not root, its ENTRYPOINT is
    in exec form and names a copied program;
  - every program the Kubernetes manifests start (a container's command[0])
    is a copied program.
Usage: deploy_containerfile.py CONTAINERFILE DESTDIR [MANIFEST...]
Prints each problem and exits 1 if there is any."""
import json
import os
import re
import subprocess
import sys

# Sanitizer runtimes of a sanitized test build are not the product's.
SANITIZER_LIBS = re.compile(r"lib(asan|ubsan|lsan|tsan|hwasan)\.so")


def instructions(path):
    """(stage index, keyword, arguments) of each instruction, continuation
    lines joined, comments dropped."""
    out, stage, pending = [], -1, ""
    for line in open(path, encoding="utf-8"):
        s = line.rstrip("\n")
        if not pending and (not s.strip() or s.lstrip().startswith("#")):
            continue
        if s.endswith("\\"):
            pending += s[:-1] + " "
            continue
        s, pending = pending + s, ""
        word, _, rest = s.strip().partition(" ")
        word = word.upper()
        if word == "FROM":
            stage += 1
        out.append((stage, word, rest.strip()))
    return out


def installed_packages():
    """name -> (essential or required, [dependency alternatives])"""
    fmt = "${Package}\t${Essential}\t${Priority}\t${Pre-Depends}, ${Depends}\t${db:Status-Status}\n"
    text = subprocess.run(["dpkg-query", "-W", "-f=" + fmt], check=True,
                          capture_output=True, text=True).stdout
    pkgs = {}
    for line in text.splitlines():
        name, essential, priority, deps, status = line.split("\t")
        if status != "installed":
            continue
        alts = []
        for dep in deps.split(","):
            names = [re.sub(r"[:\s(].*", "", a.strip()) for a in dep.split("|")]
            names = [n for n in names if n]
            if names:
                alts.append(names)
        pkgs[name] = (essential == "yes" or priority == "required", alts)
    return pkgs


def closure(roots, pkgs):
    seen, todo = set(), list(roots)
    while todo:
        p = todo.pop()
        if p in seen or p not in pkgs:
            continue
        seen.add(p)
        for alt in pkgs[p][1]:
            todo.extend(a for a in alt if a in pkgs)
    return seen


def owners(libs):
    """library path -> the package owning it (merged /usr: either spelling),
    from one dpkg -S of every spelling."""
    spellings = {}
    for lib in libs:
        for p in (lib, os.path.realpath(lib), "/usr" + lib,
                  lib[4:] if lib.startswith("/usr/") else lib):
            spellings.setdefault(p, lib)
    out = subprocess.run(["dpkg", "-S"] + sorted(spellings), capture_output=True,
                         text=True).stdout
    found = {}
    for line in out.splitlines():
        pkg, _, path = line.partition(": ")
        if path in spellings:
            found.setdefault(spellings[path], pkg.split(",")[0].strip())
    return found


def main(argv):
    containerfile, destdir, manifests = argv[1], argv[2], argv[3:]
    problems = []
    ins = instructions(containerfile)
    last = max(stage for stage, _, _ in ins)
    final = [(w, a) for stage, w, a in ins if stage == last]

    copied = {}  # image path -> installed path
    packages = []
    for word, args in final:
        if word == "RUN" and "apt-get install" in args:
            tail = args.split("apt-get install", 1)[1].split("&&")[0]
            packages += [t for t in tail.split() if not t.startswith("-")]
        if word != "COPY":
            continue
        parts = [p for p in args.split() if not p.startswith("--")]
        if "--from=build" not in args:
            problems.append(f"COPY not from the build stage: {args}")
            continue
        *sources, dest = parts
        for src in sources:
            if not src.startswith("/out/"):
                problems.append(f"COPY source {src} is not under the install root /out")
                continue
            there = os.path.join(destdir, src[len("/out/"):])
            if not os.path.exists(there):
                problems.append(f"COPY source {src} was not installed by make install")
                continue
            if os.path.isdir(there):
                for root, _, files in os.walk(there):
                    for f in files:
                        full = os.path.join(root, f)
                        copied[os.path.join(dest, os.path.relpath(full, there))] = full
            elif dest.endswith("/"):
                copied[dest + os.path.basename(src)] = there
            else:
                copied[dest] = there
    if not packages:
        problems.append("the runtime stage installs no packages")

    pkgs = installed_packages()
    for p in packages:
        if p not in pkgs:
            problems.append(f"runtime package {p} is not a package of this system "
                            "(misspelt, or not bookworm's name?)")
    base = [p for p, (required, _) in pkgs.items() if required]
    provided = closure(packages + base, pkgs)
    libs = {}
    for image_path, path in sorted(copied.items()):
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF":
                continue
        out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
        for line in out.splitlines():
            m = re.match(r"\s*(\S+) => (\S+)", line)
            if not m:
                continue
            if m.group(2) == "not":
                problems.append(f"{image_path}: {m.group(1)} not found")
            elif not SANITIZER_LIBS.search(m.group(2)):
                libs.setdefault(m.group(2), image_path)
    found = owners(libs) if libs else {}
    for lib, program in sorted(libs.items()):
        pkg = found.get(lib)
        if pkg is None:
            problems.append(f"{program}: {lib} belongs to no Debian package")
        elif pkg.split(":")[0] not in provided:
            problems.append(f"{program}: {lib} is in {pkg}, which the runtime stage "
                            "does not install")

    users = [a for w, a in final if w == "USER"]
    if not users:
        problems.append("no USER in the final stage: it would run as root")
    else:
        m = re.fullmatch(r"(\d+)(:(\d+))?", users[-1])
        if not m:
            problems.append(f"USER {users[-1]} is not numeric (runAsNonRoot cannot check a name)")
        elif int(m.group(1)) == 0:
            problems.append("USER is root")
    entry = [a for w, a in final if w == "ENTRYPOINT"]
    if not entry:
        problems.append("no ENTRYPOINT")
    else:
        try:
            argv0 = json.loads(entry[-1])[0]
        except (ValueError, IndexError, KeyError, TypeError):
            problems.append(f"ENTRYPOINT {entry[-1]} is not in exec form (a JSON array): "
                            "it would need /bin/sh")
        else:
            if argv0 not in copied:
                problems.append(f"ENTRYPOINT {argv0} is not in the image")

    for manifest in manifests:
        for m in re.finditer(r"^\s*command: \[([^,\]]+)", open(manifest, encoding="utf-8").read(),
                             re.M):
            if m.group(1).strip() not in copied:
                problems.append(f"{os.path.basename(manifest)}: command {m.group(1)} is not "
                                "in the image")

    for p in problems:
        print(p)
    print(f"{len(copied)} files copied, {len(libs)} shared libraries, "
          f"{len(packages)} runtime packages", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
