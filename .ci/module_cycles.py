#!/usr/bin/env python3
"""Fails when a crate's top-level modules import each other in a circle.

For each crate named on the command line (default: the crates whose
layers are kept pointing one way, `CHECKED` below), every file of `src/` is one node, named by its
top-level module (`src/a/b.rs` and `src/a/mod.rs` belong to `a`; `lib.rs` is
the crate root and is left out: it only declares and re-exports). An edge
`a -> b` is a path `crate::b` (or `super::b` from a top-level file) written in
`a`, outside `#[cfg(test)]` modules and comments. A cycle in that graph is
reported with its members, and the script exits 1.

The same holds inside every directory module (`src/a/`): its children are the
nodes, with `a/mod.rs` itself one more (`(mod)`). A child's `super::b` (or
`crate::a::b`) is an edge to its sibling `b`, and its `super::Item` (an item
that `mod.rs` defines) an edge to `(mod)`; `mod.rs` has an edge to each child
it names (`b::…`).
"""
import os
import re
import sys

CHECKED = ["taskwire-core", "taskwire-a2a", "taskwire-bridge"]

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def top_module(src, path):
    rel = os.path.relpath(path, src)
    parts = rel[:-3].split(os.sep)
    if parts == ["lib"] or parts == ["main"]:
        return None
    return parts[0] if parts[-1] != "mod" or len(parts) > 1 else parts[0]


def strip(text):
    # Drop line comments and the test module (by convention the file's tail).
    text = re.sub(r"//[^\n]*", "", text)
    m = re.search(r"#\[cfg\(test\)\]\s*mod\s+tests", text)
    return text[: m.start()] if m else text


def edges_of(crate):
    src = os.path.join(ROOT, "crates", crate, "src")
    mods = set()
    files = []
    for d, _, fs in os.walk(src):
        for f in fs:
            if f.endswith(".rs"):
                p = os.path.join(d, f)
                m = top_module(src, p)
                if m:
                    mods.add(m)
                    files.append((m, p))
    edges = {m: set() for m in mods}
    for m, p in files:
        text = strip(open(p, encoding="utf-8").read())
        refs = set(re.findall(r"\bcrate::(\w+)", text))
        # `use crate::{a, b::c}` groups
        for group in re.findall(r"\bcrate::\{([^}]*)\}", text, re.S):
            refs.update(re.findall(r"(?:^|,)\s*(\w+)", group))
        if os.path.dirname(p) == src:
            refs.update(re.findall(r"\bsuper::(\w+)", text))
        for r in refs:
            if r in mods and r != m:
                edges[m].add(r)
    return edges


def cycles(edges):
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def inner_edges(crate):
    """The graph of each directory module's children: {"a::b": edges}."""
    src = os.path.join(ROOT, "crates", crate, "src")
    out = {}
    for d, _, fs in os.walk(src):
        if d == src or "mod.rs" not in fs:
            continue
        path = os.path.relpath(d, src).split(os.sep)
        children = {f[:-3] for f in fs if f.endswith(".rs") and f != "mod.rs"}
        children |= {x for x in os.listdir(d) if os.path.isdir(os.path.join(d, x))}
        edges = {c: set() for c in children}
        edges["(mod)"] = set()
        prefix = "crate::" + "::".join(path) + "::"
        for c in sorted(children):
            files = [os.path.join(d, c + ".rs")]
            for dd, _, ffs in os.walk(os.path.join(d, c)):
                files += [os.path.join(dd, f) for f in ffs if f.endswith(".rs")]
            for p in files:
                if not os.path.exists(p):
                    continue
                text = strip(open(p, encoding="utf-8").read())
                direct = os.path.dirname(p) == d or p == os.path.join(d, c, "mod.rs")
                refs = set(re.findall(re.escape(prefix) + r"(\w+)", text))
                if direct:
                    refs |= set(re.findall(r"\bsuper::(\w+)", text))
                    for group in re.findall(r"\bsuper::\{([^}]*)\}", text, re.S):
                        refs.update(re.findall(r"(?:^|,)\s*(\w+)", group))
                for r in refs:
                    if r == c:
                        continue
                    edges[c].add(r if r in children else "(mod)")
        text = strip(open(os.path.join(d, "mod.rs"), encoding="utf-8").read())
        for r in set(re.findall(r"(?<![\w:])(\w+)::", text)):
            if r in children:
                edges["(mod)"].add(r)
        out["::".join(path)] = edges
    return out


def report(name, e):
    found = cycles(e)
    for comp in found:
        inner = {m: sorted(e[m] & set(comp)) for m in comp}
        print(f"{name}: modules import each other in a circle: {inner}")
    return not found


def main():
    crates = sys.argv[1:] or CHECKED
    bad = False
    for c in crates:
        e = edges_of(c)
        inner = inner_edges(c)
        ok = report(c, e)
        for path, edges in sorted(inner.items()):
            ok = report(f"{c} {path}/", edges) and ok
        if ok:
            print(f"{c}: no import circles between its {len(e)} modules, nor inside "
                  f"its {len(inner)} directory modules")
        bad = bad or not ok
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
