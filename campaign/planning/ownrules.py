"""What a test file of the user's own must not do, found by reading it (and the local files it reads).

Each rule protects what a cell measures; a file that breaks one is refused at prepare with the
file, the line and the fix, rather than giving a cell that fails or measures something else:

- ``environment``: it sets environment variables (``os.environ[...] =``, ``.update``, ``os.putenv``
  ...). The switch under test *is* an environment variable the campaign sets per cell.
- ``process``: it starts processes (``subprocess``, ``multiprocessing``, ``os.system``, ``os.fork``
  ...). A child compiles and launches outside the cell's IR capture, timer and compile-only driver.
- ``cwd``: it changes the working directory (``os.chdir``). The cell's files are written by path
  from the working directory the worker sets; read data relative to ``__file__`` instead.
- ``device`` (on the compile-only backend, ``device.backend: cpu``, only): it names a CUDA device
  itself (``torch.cuda.synchronize()`` outside an ``if torch.cuda.is_available():``, ``.cuda()``,
  ``device="cuda"``, a ``skipif`` on ``torch.cuda.is_available()``). Nothing runs on a GPU there and
  torch has no CUDA; the device comes from ``triton.runtime.driver.active.get_active_torch_device()``.

Static: a rule broken through ``getattr`` or ``exec`` is not seen. Pure over the files' text.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, Optional

ENV_WRITES = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}
OS_PROCESS = {"system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp",
              *(f"spawn{s}" for s in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")),
              *(f"exec{s}" for s in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe"))}
PROCESS_MODULES = ("subprocess", "multiprocessing", "torch.multiprocessing", "concurrent.futures.process")
DEVICE_FIX = ("on the compile-only backend (device.backend: cpu) nothing runs on a GPU and torch has no CUDA: take the "
              "device from triton.runtime.driver.active.get_active_torch_device() (guard anything CUDA-only with "
              "`if torch.cuda.is_available():`)")
FIXES = {
    "environment": "the switch under test is an environment variable the campaign sets per cell; set variables "
                   "in the manifest's cells, not in the file",
    "process": "a child process compiles and launches outside the cell's IR capture and timer; "
               "run the kernel in the test's own process",
    "cwd": "the cell writes its files from the working directory the worker sets; "
           "read data relative to Path(__file__).parent instead",
    "device": DEVICE_FIX,
}


def _dotted(node: ast.AST) -> Optional[str]:
    """``os.environ.update`` -> "os.environ.update"; None for anything but names and attributes."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _cuda_string(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and (
        node.value == "cuda" or node.value.startswith("cuda:"))


class _Scan(ast.NodeVisitor):
    def __init__(self, compile_only: bool):
        self.compile_only = compile_only
        self.guarded = 0          # depth of `if ...torch.cuda.is_available...:` bodies
        self.found: list[tuple[int, str, str]] = []    # (line, rule, what)

    def hit(self, node: ast.AST, rule: str, what: str) -> None:
        self.found.append((getattr(node, "lineno", 0), rule, what))

    def visit_Import(self, node):
        for alias in node.names:
            if alias.name.startswith(PROCESS_MODULES):
                self.hit(node, "process", f"imports {alias.name}")

    def visit_ImportFrom(self, node):
        module = node.module or ""
        names = {alias.name for alias in node.names}
        if module.startswith(PROCESS_MODULES) or (module == "concurrent.futures" and "ProcessPoolExecutor" in names):
            self.hit(node, "process", f"imports from {module}")
        if module == "os" and names & (OS_PROCESS | {"chdir", "putenv", "unsetenv", "environ"}):
            self.hit(node, "process" if names & OS_PROCESS else "cwd" if "chdir" in names else "environment",
                     f"imports {', '.join(sorted(names))} from os")

    def visit_Assign(self, node):
        for target in node.targets:
            if isinstance(target, ast.Subscript) and _dotted(target.value) == "os.environ":
                self.hit(node, "environment", "assigns os.environ[...]")
        self.generic_visit(node)

    def visit_Delete(self, node):
        if any(isinstance(t, ast.Subscript) and _dotted(t.value) == "os.environ" for t in node.targets):
            self.hit(node, "environment", "deletes os.environ[...]")
        self.generic_visit(node)

    def visit_If(self, node):
        guard = any(_dotted(n) == "torch.cuda.is_available" for n in ast.walk(node.test))
        self.visit(node.test)
        self.guarded += guard
        for child in node.body:
            self.visit(child)
        self.guarded -= guard
        for child in node.orelse:
            self.visit(child)

    def visit_FunctionDef(self, node):
        for decorator in node.decorator_list:
            if self.compile_only and any(_dotted(n) == "torch.cuda.is_available" for n in ast.walk(decorator)):
                self.hit(decorator, "device", f"{node.name} is skipped or marked on torch.cuda.is_available()")
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node):
        name = _dotted(node.func) or ""
        attr = node.func.attr if isinstance(node.func, ast.Attribute) else name
        if name in ("os.putenv", "os.unsetenv") or (name.startswith("os.environ.") and name.rsplit(".", 1)[1] in ENV_WRITES):
            self.hit(node, "environment", f"calls {name}")
        elif name.startswith("os.") and name[3:] in OS_PROCESS:
            self.hit(node, "process", f"calls {name}")
        elif name == "os.chdir":
            self.hit(node, "cwd", "calls os.chdir")
        elif self.compile_only and attr == "cuda" and not node.args:
            self.hit(node, "device", "calls .cuda()")
        elif self.compile_only and (any(k.arg == "device" and _cuda_string(k.value) for k in node.keywords)
                                    or (attr in ("to", "device") and any(map(_cuda_string, node.args)))):
            self.hit(node, "device", f"names the device \"cuda\" in {name or '.' + attr}(...)")
        self.generic_visit(node)

    def visit_Attribute(self, node):
        name = _dotted(node)
        if self.compile_only and not self.guarded and name and name.startswith("torch.cuda.") and name != "torch.cuda.is_available":
            self.hit(node, "device", f"uses {name} outside `if torch.cuda.is_available():`")
            return
        self.generic_visit(node)


def broken(path: Path, text: str, compile_only: bool) -> Iterator[str]:
    """Each rule ``text`` (the file at ``path``) breaks: ``path:line: rule: what; fix``."""
    scan = _Scan(compile_only)
    try:
        scan.visit(ast.parse(text, filename=str(path)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return      # the file's own refusal (does not parse) comes from `campaign.planning.targets`
    for line, rule, what in sorted(set(scan.found)):
        yield f"{path}:{line}: {rule}: {what}; {FIXES[rule]}"
