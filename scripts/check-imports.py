#!/usr/bin/env python3
"""Every target imports exactly what Package.swift declares for it (run by scripts/test.sh).

An undeclared import (a module that arrives transitively through another dependency) builds only
by luck of the graph and hides which way modules depend on each other; a declared dependency that
no file imports is noise in the graph. SwiftPM's --explicit-target-dependency-import-check does not
flag a module that is reachable transitively, which is the common case, so this reads the package
description (`swift package describe --type json`) and the sources' import lines itself.

  scripts/check-imports.py [DESCRIBE.json]     # without an argument, runs swift package describe
"""
import json
import pathlib
import re
import subprocess
import sys

# Modules of the toolchain and the C library: no package dependency provides them.
SYSTEM = {"Foundation", "FoundationEssentials", "FoundationNetworking", "Glibc", "Musl", "Darwin",
          "Dispatch", "Synchronization", "Testing", "XCTest", "_Concurrency", "os"}
# Declared without an import on purpose: the end-to-end tests start the executable, so they
# depend on it to have it built first.
BUILD_ORDER_ONLY = {("EndToEndTests", "httpdns_proxy")}
IMPORT = re.compile(r"^\s*(?:@testable\s+|@_exported\s+|@preconcurrency\s+)*import\s+"
                    r"(?:(?:class|struct|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)", re.M)


def main():
    if len(sys.argv) > 1:
        description = json.loads(pathlib.Path(sys.argv[1]).read_text())
    else:
        description = json.loads(subprocess.run(["swift", "package", "describe", "--type", "json"],
                                                check=True, capture_output=True, text=True).stdout)
    c99 = {target["name"]: target["c99name"] for target in description["targets"]}
    problems = []
    for target in description["targets"]:
        if target.get("module_type") != "SwiftTarget":
            continue
        name = target["c99name"]
        declared = {c99.get(dep, dep) for dep in target.get("target_dependencies") or []}
        declared |= set(target.get("product_dependencies") or [])
        imported = set()
        for source in target.get("sources") or []:
            text = (pathlib.Path(target["path"]) / source).read_text()
            # Lower-case names are Python's, inside the tests' string literals ("import dns.message").
            imported |= {module for module in IMPORT.findall(text) if module[0].isupper() or module[0] == "_"}
        imported -= SYSTEM
        imported.discard(name)
        for module in sorted(imported - declared):
            problems.append(f"{target['name']}: imports {module}, which Package.swift does not declare for it")
        for module in sorted(declared - imported):
            if (target["name"], module) not in BUILD_ORDER_ONLY:
                problems.append(f"{target['name']}: declares {module}, which none of its files imports")
    for problem in problems:
        print(problem)
    if problems:
        sys.exit(1)
    swift_targets = sum(1 for t in description["targets"] if t.get("module_type") == "SwiftTarget")
    print(f"imports match the declared dependencies of {swift_targets} Swift targets")


if __name__ == "__main__":
    main()
