#!/usr/bin/env python3
"""The suite's inventory: every test function with the number of `assert` statements in its
body (helpers it calls not counted), per file. Committed before and after a change to the suite
so a dropped test or a weakened one shows in review:

    scripts/test-inventory.py [TEST_DIR] > test/inventory.txt
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def inventory(folder: Path) -> list[str]:
    rows = []
    for path in sorted(folder.glob("test_*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_"):
                asserts = sum(isinstance(n, ast.Assert) for n in ast.walk(node))
                raises = sum(isinstance(n, ast.withitem) and "raises" in ast.unparse(n.context_expr)
                             for n in ast.walk(node))
                rows.append(f"{path.name}::{node.name}\tasserts={asserts}\traises={raises}")
    return rows


def main() -> int:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "test"
    rows = inventory(folder)
    print("\n".join(rows))
    print(f"# {len(rows)} test functions, {sum(int(r.split('asserts=')[1].split()[0]) for r in rows)} asserts",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
