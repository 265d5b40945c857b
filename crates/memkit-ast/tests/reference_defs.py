"""Python's own view of a corpus, for mem-ast's agreement test.

Usage: reference_defs.py ROOT... > defs.jsonl
One line per .py file under the roots (sorted): {"path", "defs": [[qualname, kind, line_start,
line_end], ...]} in source order, or {"path", "error"} when ast.parse refuses the file.
"""
import ast
import json
import os
import sys


def defs(tree):
    out = []

    def walk(node, stack):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                parent = stack[-1] if stack else None
                in_class = isinstance(parent, ast.ClassDef)
                if isinstance(child, ast.ClassDef):
                    kind = "class"
                elif isinstance(child, ast.AsyncFunctionDef):
                    kind = "async_method" if in_class else "async_function"
                else:
                    kind = "method" if in_class else "function"
                qual = ".".join([s.name for s in stack] + [child.name])
                out.append([qual, kind, child.lineno, child.end_lineno])
                walk(child, stack + [child])
            else:
                walk(child, stack)

    walk(tree, [])
    return out


def main():
    sys.setrecursionlimit(10000)
    paths = []
    for root in sys.argv[1:]:
        for d, dirs, files in os.walk(root):
            dirs.sort()
            paths += [os.path.join(d, f) for f in sorted(files) if f.endswith(".py")]
    for p in paths:
        try:
            with open(p, "rb") as f:
                src = f.read()
            rec = {"path": p, "defs": defs(ast.parse(src, p))}
        except (SyntaxError, ValueError, RecursionError, MemoryError, UnicodeDecodeError) as e:
            rec = {"path": p, "error": f"{type(e).__name__}: {e}"}
        except OSError:
            continue
        sys.stdout.write(json.dumps(rec) + "\n")


main()
