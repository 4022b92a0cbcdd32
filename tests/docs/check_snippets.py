#!/usr/bin/env python3
"""Docs show code that compiles: every ```cpp block preceded by
<!-- snippet: PATH#NAME --> must equal the region between `// example-begin NAME` and
`// example-end NAME` in PATH (a file built by the test suite), after removing the common
indentation. Exits 1 listing each stale snippet, 0 when all match."""
import pathlib, re, sys, textwrap

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
marker = re.compile(r"<!-- snippet: ([^#\s]+)#([\w.-]+) -->\s*\n```cpp\n(.*?)```", re.S)
bad, count = [], 0
for doc in sorted((root / "docs").glob("*.md")):
    for path, name, shown in marker.findall(doc.read_text()):
        count += 1
        src = (root / path)
        if not src.exists():
            bad.append(f"{doc.name}: {path} does not exist"); continue
        m = re.search(rf"//\s*example-begin {re.escape(name)}\s*\n(.*?)\n\s*//\s*example-end {re.escape(name)}",
                      src.read_text(), re.S)
        if not m:
            bad.append(f"{doc.name}: no example-begin/end '{name}' in {path}"); continue
        if textwrap.dedent(m.group(1)).strip() != textwrap.dedent(shown).strip():
            bad.append(f"{doc.name}: snippet {path}#{name} differs from the source")
for b in bad:
    print(b)
print(f"{count} snippets checked, {len(bad)} stale")
sys.exit(1 if bad or count == 0 else 0)
