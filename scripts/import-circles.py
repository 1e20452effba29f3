#!/usr/bin/env python3
"""Import circles of a Rust crate: which modules import each other, directly or around a loop.

Usage: scripts/import-circles.py CRATE_SRC_DIR [--depth N] [--tests] [--explain] [--check]

Builds the crate's module tree from `mod` declarations (starting at lib.rs or main.rs),
then one edge A -> B for every reference in A's code to an item defined in B: `use`
statements (`crate::`, `super::`, `self::` and child-module paths, nested braces and
renames included) and paths in code (`crate::x::Y`, `super::f()`). A name reached
through a re-export (`pub use` in lib.rs or a mod.rs) counts for the module that
defines it, so the crate root's re-exports do not make every module depend on every
other. Comments and string literals are ignored (intra-doc links are not imports),
and so is test code (`#[cfg(test)]` items and modules) unless --tests is given.

Modules are counted at a depth below the crate root: --depth 1 (the default) makes
every top-level module, with all its submodules, one node; --depth 0 makes every
module its own node. The crate root is never a node. Prints the node count, then
every strongly connected component with more than one node (a circle) with its size
and members, largest first; --explain adds, for each edge inside a circle, where the
first reference is (file:line).

Exit status 0: this measures, it does not judge; with --check, 1 when there is a circle
(what CI runs, .ci/run). Only the standard library.
"""

import argparse
import os
import re
import sys
from collections import defaultdict

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
ITEM_RE = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:(?:unsafe|async|const|extern(?:\s+\"[^\"]*\")?)\s+)*"
    r"(?:struct|enum|union|trait|fn|type|const|static|mod)\s+(" + IDENT + r")",
    re.M,
)
MACRO_RE = re.compile(r"^\s*macro_rules!\s*(" + IDENT + r")", re.M)
MOD_DECL_RE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;", re.M)
USE_RE = re.compile(r"(?:^|(?<=[;{}\s]))(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]*);", re.S)
PATH_RE = re.compile(r"(?<![A-Za-z0-9_:])((?:crate|super|self)(?:\s*::\s*" + IDENT + r")+)")


def strip_comments_and_strings(text):
    """Blank out comments, string and char literals, keeping line numbers."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + len(m.group(0)))
            end = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'":
            # A char literal ('a', '\n', '\u{..}') or a lifetime ('a): only literals are skipped.
            m = re.match(r"'(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'", text[i:])
            if m:
                out.append("' '")
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def item_end(text, start):
    """The end of the item starting at `start`: its first `;` or its balanced `{...}`."""
    i, depth = start, 0
    while i < len(text):
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        elif c == ";" and depth == 0:
            return i + 1
        i += 1
    return len(text)


def strip_test_code(text):
    """Blank out `#[cfg(test)]` items; return the text and the names of test child modules."""
    test_mods = set()
    while True:
        m = re.search(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]", text)
        if not m:
            return text, test_mods
        rest = text[m.end():]
        decl = re.match(r"\s*(?:#\s*\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;", rest)
        if decl:
            test_mods.add(decl.group(1))
        end = item_end(text, m.end())
        text = text[: m.start()] + "\n" * text.count("\n", m.start(), end) + text[end:]


def expand_use_tree(tree_with_spaces):
    """Expand a use tree; ` as ` renames are kept apart from path segments."""
    s = re.sub(r"\s+as\s+", "@", tree_with_spaces)
    s = re.sub(r"\s+", "", s)
    out = []

    def split_top(t):
        parts, depth, cur = [], 0, ""
        for ch in t:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        if cur:
            parts.append(cur)
        return parts

    def walk(prefix, t):
        if not t:
            return
        if t.endswith("}") and "{" in t:
            brace = t.index("{")
            head = t[:brace]
            segs = prefix + [x for x in head.split("::") if x]
            for part in split_top(t[brace + 1:-1]):
                walk(segs, part)
            return
        alias = None
        if "@" in t:
            t, alias = t.split("@", 1)
        segs = prefix + [x for x in t.split("::") if x]
        if not segs:
            return
        if segs[-1] == "self":
            segs = segs[:-1]
            bound = alias or (segs[-1] if segs else None)
        elif segs[-1] == "*":
            bound = "*"
        else:
            bound = alias or segs[-1]
        out.append((segs, bound))

    walk([], s)
    return out


class Module:
    def __init__(self, path, file):
        self.path = path  # tuple of segments below the crate root
        self.file = file
        self.children = {}
        self.items = set()
        self.uses = {}  # bound name -> (absolute segments, line)
        self.globs = []  # absolute module segments
        self.refs = []  # (absolute segments, line)
        self.text = ""


def child_file(parent_file, parent_is_dir_owner, name):
    base = os.path.dirname(parent_file)
    if not parent_is_dir_owner:
        base = os.path.join(base, os.path.splitext(os.path.basename(parent_file))[0])
    for candidate in (os.path.join(base, name + ".rs"), os.path.join(base, name, "mod.rs")):
        if os.path.exists(candidate):
            return candidate
    return None


def load(src, include_tests):
    root_file = next((os.path.join(src, f) for f in ("lib.rs", "main.rs") if os.path.exists(os.path.join(src, f))), None)
    if root_file is None:
        sys.exit(f"import-circles: no lib.rs or main.rs in {src}")
    modules = {}

    def visit(path, file, dir_owner):
        mod = Module(path, file)
        modules[path] = mod
        with open(file, encoding="utf-8") as f:
            text = strip_comments_and_strings(f.read())
        test_mods = set()
        if not include_tests:
            text, test_mods = strip_test_code(text)
        mod.text = text
        mod.items = set(ITEM_RE.findall(text)) | set(MACRO_RE.findall(text))
        for name in MOD_DECL_RE.findall(text):
            if name in test_mods:
                continue
            cf = child_file(file, dir_owner, name)
            if cf is None:
                continue
            mod.children[name] = path + (name,)
            visit(path + (name,), cf, os.path.basename(cf) == "mod.rs")

    visit((), root_file, True)
    return modules


def absolute(mod, segs, modules, in_use):
    """Make a path absolute (segments below the crate root), or None for external paths."""
    if not segs:
        return None
    base = list(mod.path)
    first = segs[0]
    if first == "crate":
        return segs[1:]
    if first in ("super", "self"):
        i = 0
        while i < len(segs) and segs[i] in ("super", "self"):
            if segs[i] == "super":
                base = base[:-1]
            i += 1
        return base + segs[i:]
    if first in mod.children:
        return base + segs
    if not in_use and first in mod.uses:
        target, _ = mod.uses[first]
        return target + segs[1:] if target is not None else None
    return None


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def parse_refs(modules):
    for mod in modules.values():
        text = mod.text
        spans = []
        for m in USE_RE.finditer(text):
            line = line_of(text, m.start())
            spans.append((m.start(), m.end()))
            for segs, bound in expand_use_tree(m.group(1)):
                target = absolute(mod, segs, modules, True)
                if target is None:
                    continue
                if bound == "*":
                    mod.globs.append(tuple(target[:-1]))
                    mod.refs.append((target[:-1], line))
                else:
                    mod.uses[bound] = (target, line)
                    mod.refs.append((target, line))
        for m in PATH_RE.finditer(text):
            if any(a <= m.start() < b for a, b in spans):
                continue
            segs = [s.strip() for s in m.group(1).split("::")]
            target = absolute(mod, segs, modules, False)
            if target is not None:
                mod.refs.append((target, line_of(text, m.start())))


def resolve(segs, modules, seen=None):
    """The module defining the item at absolute path `segs` (through re-exports)."""
    seen = seen or set()
    key = tuple(segs)
    if key in seen:
        return None
    seen.add(key)
    cur = ()
    i = 0
    while i < len(segs) and segs[i] in modules[cur].children:
        cur = modules[cur].children[segs[i]]
        i += 1
    if i == len(segs):
        return cur  # the path names a module itself
    name = segs[i]
    mod = modules[cur]
    if name in mod.items:
        return cur
    if name in mod.uses:
        target, _ = mod.uses[name]
        found = resolve(list(target) + list(segs[i + 1:]), modules, seen)
        return found if found is not None else cur
    for glob in mod.globs:
        if glob in modules:
            found = resolve(list(glob) + list(segs[i:]), modules, seen)
            if found is not None and (name in modules[found].items or found != glob):
                return found
    return cur


def node_of(path, depth):
    if depth == 0:
        return path
    return path[:depth]


def sccs(nodes, edges):
    """Tarjan's strongly connected components."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]
    sys.setrecursionlimit(10000)

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            strong(v)
    return out


def name(node):
    return "::".join(node) if node else "(crate root)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", help="the crate's src directory (holding lib.rs or main.rs)")
    ap.add_argument("--depth", type=int, default=1, help="module depth of a node; 0: every module (default 1)")
    ap.add_argument("--tests", action="store_true", help="count test code too")
    ap.add_argument("--explain", action="store_true", help="show where each edge inside a circle comes from")
    ap.add_argument("--check", action="store_true", help="exit with status 1 when there is a circle")
    args = ap.parse_args()

    modules = load(args.src, args.tests)
    parse_refs(modules)
    nodes = {node_of(p, args.depth) for p in modules if p}
    edges, evidence = defaultdict(set), {}
    for mod in modules.values():
        if not mod.path:
            continue
        src_node = node_of(mod.path, args.depth)
        for target, line in mod.refs:
            defining = resolve(list(target), modules)
            if not defining:
                continue
            dst_node = node_of(defining, args.depth)
            if dst_node == src_node or dst_node not in nodes:
                continue
            edges[src_node].add(dst_node)
            evidence.setdefault((src_node, dst_node), f"{os.path.relpath(mod.file)}:{line} -> {'::'.join(target)}")

    comps = sorted((c for c in sccs(nodes, edges) if len(c) > 1), key=lambda c: (-len(c), c))
    print(f"{args.src}: {len(nodes)} modules (depth {args.depth}), {sum(len(v) for v in edges.values())} import edges")
    if not comps:
        print("no circles")
    for comp in comps:
        print(f"circle of {len(comp)}: {' '.join(name(n) for n in comp)}")
        if args.explain:
            members = set(comp)
            for a in comp:
                for b in sorted(edges.get(a, ())):
                    if b in members:
                        print(f"    {name(a)} -> {name(b)}   ({evidence[(a, b)]})")
    if args.check and comps:
        sys.exit(1)


if __name__ == "__main__":
    main()
