"""Run the code blocks of one Markdown page in order, as a reader would (tests/docs/test_docs_examples.py).

Each page runs in a process of its own (:func:`run_page`: ``python tests/support/harness/docs_runner.py ROOT PAGE
OUT``), as a reader's session would: pages import libraries that cannot share a process (two
builds of LLVM: TensorFlow under Keras, and Triton, abort the interpreter), and a page's
imports, environment variables and modules must not leak into the tests or the next page. The
process writes one JSON line per block as it finishes it, so a process that dies is reported
at the block it died in, with the end of its stderr.

A page runs in its own temporary directory, which holds a link to each top-level entry of the
repository (so ``conformance/presets/llama-3.1-8b.json`` or ``golden/`` resolve as they do from a
checkout) and the files the page's ``docs-test: file`` blocks write; that directory is the
working directory and the first entry of ``sys.path`` while a block runs. All ``python`` and
``pycon`` blocks of a page share one namespace, in page order; environment variables a block
sets last for the rest of the page only. Blocks run lazily: asking for a block's result runs
every earlier block of the page first (once).

Results: ``passed``; ``failed`` (an exception, with the traceback's lines on the page; printed
output that differs from the page's ``output`` block; a signature listing that disagrees with
the code; an earlier block of the page failed); ``skipped`` (a ``docs-test: skip`` directive, or
an optional library that is not installed, except under ``CI=true``, where CI installs every one
and a missing one fails, as in the rest of the suite).
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import importlib
import inspect
import io
import json
import os
import re
import runpy
import shutil
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docs_blocks import Block, read_blocks

__all__ = ["BlockResult", "PageRun", "OPTIONAL_LIBRARIES", "check_signatures", "compare_output", "run_page"]

PAGE_TIMEOUT_S = 600

#: libraries a page may use that are optional extras of roperef (pyproject.toml): missing -> skip locally, fail in CI
#: (``DOCS_TEST_OPTIONAL``, comma-separated, adds names: the harness's own tests use it)
OPTIONAL_LIBRARIES = frozenset({
    "torch", "transformers", "jax", "jaxlib", "keras", "keras_hub", "mlx", "mlx_lm", "onnx", "onnxruntime", "triton",
    "rotary_embedding_torch", "litgpt", "torchtune", "torchao", "liger_kernel", "penzai", "matplotlib", "flash_attn",
    "vllm", "transformer_engine", "ggml",
})
#: where a bare first name of a signature listing is looked up, after the page's own namespace
_PACKAGES = ("roperef.", "conformance.", "")
_CHECKER = doctest.OutputChecker()


@dataclass(frozen=True)
class BlockResult:
    status: str  # "passed", "failed" or "skipped"
    message: str = ""


def _normal(text: str) -> str:
    """Trailing spaces of each line and blank lines at either end removed."""
    return "\n".join(line.rstrip() for line in text.strip("\n").split("\n")).strip("\n") + "\n"


def compare_output(want: str, got: str) -> str | None:
    """``None`` when ``got`` shows what ``want`` shows (``...`` matches anything), else the difference."""
    want, got = _normal(want), _normal(got)
    if _CHECKER.check_output(want, got, doctest.ELLIPSIS):
        return None
    return "printed output differs from the page's ```output block:\n" + "".join(
        f"  page:    {w}\n  printed: {g}\n" for w, g in _first_difference(want, got))


def _first_difference(want: str, got: str) -> list[tuple[str, str]]:
    w, g = want.split("\n"), got.split("\n")
    for k in range(max(len(w), len(g))):
        a = w[k] if k < len(w) else "<nothing>"
        b = g[k] if k < len(g) else "<nothing>"
        if a != b and "..." not in a:
            return [(a, b)]
    return [(want.strip(), got.strip())]


def _resolve(dotted: list[str], namespace: dict[str, Any]) -> Any:
    """The object ``a.b.c`` names: ``a`` from the page's namespace, else the longest importable module
    prefix (also under ``roperef.`` / ``conformance.``), then attributes."""
    if dotted[0] in namespace:
        obj, rest = namespace[dotted[0]], dotted[1:]
    else:
        for prefix in _PACKAGES:
            for k in range(len(dotted), 0, -1):
                try:
                    obj, rest = importlib.import_module(prefix + ".".join(dotted[:k])), dotted[k:]
                    break
                except ModuleNotFoundError:
                    continue
            else:
                continue
            break
        else:
            raise LookupError(f"{dotted[0]!r} is neither defined by an earlier block nor an importable module "
                              f"(also tried roperef.{dotted[0]}, conformance.{dotted[0]})")
    for name in rest:
        obj = getattr(obj, name)
    return obj


def _listing_lines(source: str) -> list[tuple[str, str, str]]:
    """``(line text, dotted name, parameter text)`` per signature of a listing (a signature may span lines)."""
    out, pending = [], ""
    for raw in source.split("\n"):
        code = raw.split("#", 1)[0].rstrip()
        if not code.strip() and not pending:
            continue
        pending = f"{pending} {code.strip()}".strip()
        if pending.count("(") > pending.count(")"):
            continue
        m = re.fullmatch(r"([A-Za-z_][\w.]*)\((.*)\)", pending)
        out.append((pending, m.group(1) if m else "", m.group(2) if m else ""))
        pending = ""
    if pending:
        out.append((pending, "", ""))
    return out


def _listed_parameters(params: str) -> list[tuple[str, object]]:
    """``[(marker or name, default)]`` of a parameter list as written, ``*``/``/`` markers and ``*args``/``**kw`` kept."""
    args = ast.parse(f"def _listed({params}):\n    pass").body[0].args  # type: ignore[attr-defined]
    out: list[tuple[str, object]] = []
    positional = [*args.posonlyargs, *args.args]
    defaults = [inspect.Parameter.empty] * (len(positional) - len(args.defaults)) + [ast.literal_eval(d) for d in args.defaults]
    for k, (a, d) in enumerate(zip(positional, defaults)):
        out.append((a.arg, d))
        if args.posonlyargs and k == len(args.posonlyargs) - 1:
            out.append(("/", inspect.Parameter.empty))
    if args.vararg:
        out.append(("*" + args.vararg.arg, inspect.Parameter.empty))
    elif args.kwonlyargs:
        out.append(("*", inspect.Parameter.empty))
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        out.append((a.arg, inspect.Parameter.empty if d is None else ast.literal_eval(d)))
    if args.kwarg:
        out.append(("**" + args.kwarg.arg, inspect.Parameter.empty))
    return out


def _code_parameters(target: Any) -> list[tuple[str, object]]:
    """The same form for a real callable (``inspect.signature``)."""
    out: list[tuple[str, object]] = []
    params = list(inspect.signature(target).parameters.values())
    for k, p in enumerate(params):
        if p.kind is p.VAR_POSITIONAL:
            out.append(("*" + p.name, p.empty))
        elif p.kind is p.VAR_KEYWORD:
            out.append(("**" + p.name, p.empty))
        else:
            if p.kind is p.KEYWORD_ONLY and not any(q.kind in (q.VAR_POSITIONAL, q.KEYWORD_ONLY) for q in params[:k]):
                out.append(("*", p.empty))
            out.append((p.name, p.default))
        if p.kind is p.POSITIONAL_ONLY and (k + 1 == len(params) or params[k + 1].kind is not p.POSITIONAL_ONLY):
            out.append(("/", p.empty))
    return out


def check_signatures(block: Block, namespace: dict[str, Any]) -> str | None:
    """``None`` when every signature of a listing matches the code, else why not.

    Each signature is ``dotted.name(parameters)`` (a trailing ``# comment`` allowed; it may span
    lines), the parameters written as in a ``def``: names in order, ``*`` and ``/`` markers,
    ``*args``/``**kwargs``, ``name=default`` with a literal default (``name=...``: it has a
    default, not shown: a factory, a frozenset). The callable's real
    parameters (``inspect.signature``) must be exactly those, in that order and of those kinds,
    and every default the listing states must be the code's. ``dotted`` is looked up in the
    page's namespace, else imported (also as ``roperef.dotted`` and ``conformance.dotted``).
    """
    problems = []
    for text, name, params in _listing_lines(block.source):
        if not name:
            problems.append(f"{text!r}: a listing line is name(parameters)")
            continue
        try:
            listed = _listed_parameters(params)
        except (SyntaxError, ValueError) as exc:
            problems.append(f"{text!r}: the parameters are not a def's parameter list with literal defaults ({exc})")
            continue
        try:
            actual = _code_parameters(_resolve(name.split("."), namespace))
        except (LookupError, AttributeError, ValueError, TypeError) as exc:
            problems.append(f"{text!r}: {exc}")
            continue
        if [n for n, _ in listed] != [n for n, _ in actual]:
            problems.append(f"{text!r}: the code has ({', '.join(n for n, _ in actual)})")
            continue
        for (pname, want), (_, have) in zip(listed, actual):
            if want is inspect.Parameter.empty:
                continue
            if have is inspect.Parameter.empty:
                problems.append(f"{text!r}: {pname} has no default in the code")
            elif want is not Ellipsis and not (type(have) is type(want) and have == want):  # ``=...``: some default
                problems.append(f"{text!r}: {pname} defaults to {have!r} in the code, not {want!r}")
    return "\n".join(problems) or None


class PageRun:
    """One page's blocks, run in order on demand; :meth:`close` removes the page's directory."""

    def __init__(self, root: Path, blocks: list[Block], directory: Path | None = None) -> None:
        """``directory``: the page's (empty) directory, kept by the caller; by default a new one :meth:`close` removes."""
        self.root = root
        self.blocks = blocks
        self.results: list[BlockResult] = []
        self.missing: str | None = None  # an optional library an earlier block needed and did not find
        self.namespace: dict[str, Any] = {"__name__": "__docs__"}
        self.env: dict[str, str] = dict(os.environ)
        self.owns_dir = directory is None
        self.dir = Path(tempfile.mkdtemp(prefix="docs-page-")) if directory is None else directory
        for entry in root.iterdir():
            if entry.name != ".git" and not entry.name.startswith("."):
                (self.dir / entry.name).symlink_to(entry)

    def result(self, block: Block) -> BlockResult:
        index = self.blocks.index(block)
        while len(self.results) <= index:
            self.results.append(self._run(self.blocks[len(self.results)]))
        return self.results[index]

    def close(self) -> None:
        for name, module in list(sys.modules.items()):
            if str(getattr(module, "__file__", "") or "").startswith(str(self.dir)):
                del sys.modules[name]
        if self.owns_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    # -------------------------------------------------------------------------------------

    def _run(self, block: Block) -> BlockResult:
        failed = next((b for b, r in zip(self.blocks, self.results)  # a listing changes nothing later blocks see
                       if r.status == "failed" and b.lang != "python-signature"), None)
        if block.skip:
            return BlockResult("skipped", f"{block.id}: docs-test: skip {block.skip}")
        if failed is not None:
            return BlockResult("failed", f"{block.id}: not run: the earlier block {failed.id} of this page failed")
        if self.missing is not None:  # later blocks use what the skipped one would have defined
            return BlockResult("skipped", f"{block.id}: not run: an earlier block of this page needs {self.missing}, not installed")
        if block.lang == "python-signature":
            problem = check_signatures(block, self.namespace)
            return BlockResult("failed", f"{block.id}: {problem}") if problem else BlockResult("passed")
        saved_env, saved_cwd, saved_path = dict(os.environ), os.getcwd(), list(sys.path)
        os.environ.clear()
        os.environ.update(self.env)
        os.chdir(self.dir)
        sys.path.insert(0, str(self.dir))
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                self._execute(block)
        except ModuleNotFoundError as exc:
            top = (exc.name or "").split(".")[0]
            optional = OPTIONAL_LIBRARIES | set(filter(None, os.environ.get("DOCS_TEST_OPTIONAL", "").split(",")))
            if top in optional and os.environ.get("CI") != "true":
                self.missing = top
                return BlockResult("skipped", f"{block.id}: needs {top}, not installed (CI installs it: there this fails)")
            return BlockResult("failed", self._traceback(block, exc))
        except BaseException as exc:  # anything a block raises (SystemExit included) fails that block
            return BlockResult("failed", self._traceback(block, exc))
        finally:
            self.env = dict(os.environ)
            os.environ.clear()
            os.environ.update(saved_env)
            os.chdir(saved_cwd)
            sys.path[:] = saved_path
        if block.output is not None:
            difference = compare_output(block.output, printed.getvalue())
            if difference:
                return BlockResult("failed", f"{block.id}: {difference}")
        return BlockResult("passed")

    def _execute(self, block: Block) -> None:
        filename = str(self.root / block.page)
        if block.lang == "pycon":
            test = doctest.DocTestParser().get_doctest(block.source, self.namespace, block.id, filename, block.line - 1)
            report = io.StringIO()
            runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
            runner.run(test, out=report.write, clear_globs=False)
            if runner.failures:
                raise AssertionError(report.getvalue())
            return
        if block.file is None:
            exec(compile("\n" * (block.line - 1) + block.source, filename, "exec"), self.namespace)
            return
        path = self.dir / block.file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.source, encoding="utf-8")
        if path.suffix == ".py":  # run it as its own module there, and the tests it defines
            compile("\n" * (block.line - 1) + block.source, filename, "exec")  # syntax errors at the page's line
            module = runpy.run_path(str(path), run_name=path.stem)
            for name, fn in module.items():
                if name.startswith("test_") and callable(fn):
                    fn()

    def _traceback(self, block: Block, exc: BaseException) -> str:
        """The exception, with only the frames on the page or in a file it wrote (the harness's own are noise)."""
        page, written = str(self.root / block.page), str(self.dir / block.file) if block.file else None
        frames = []
        for f in traceback.extract_tb(exc.__traceback__):
            if f.filename == written:  # a line of the file this block wrote: the same line of the page
                f = traceback.FrameSummary(page, (f.lineno or 0) + block.line - 1, f.name, line=f.line)
            if f.filename.startswith(str(self.dir)):  # through a link to the repository: the repository's file
                entry = Path(f.filename).relative_to(self.dir).parts[0]
                if (self.dir / entry).is_symlink():
                    f = traceback.FrameSummary(str(self.root / Path(f.filename).relative_to(self.dir)), f.lineno, f.name, line=f.line)
            if f.filename == __file__:  # the harness itself
                continue
            if f.filename == page or f.filename.startswith((str(self.dir), str(self.root))):
                frames.append(f)
        where = "".join(traceback.format_list(frames)) if frames else ""
        return f"{block.id}: the block raised\n{where}{''.join(traceback.format_exception_only(exc)).rstrip()}"


def run_page(root: Path, page: str, blocks: list[Block], timeout: float = PAGE_TIMEOUT_S) -> list[BlockResult]:
    """The results of every block of ``page`` (``blocks``, in page order), run in a fresh Python process."""
    with tempfile.TemporaryDirectory(prefix="docs-results-") as tmp:  # removed here even when the child dies
        out, workdir = Path(tmp) / "results.jsonl", Path(tmp) / "page"
        workdir.mkdir()
        cmd = [sys.executable, str(Path(__file__).resolve()), str(root), page, str(out), str(workdir)]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=root)
            died = f"exit code {done.returncode}" if done.returncode != 0 else ""
            tail = done.stderr[-3000:]
        except subprocess.TimeoutExpired as exc:
            err = exc.stderr or ""
            died, tail = f"no result after {timeout:g} s", (err.decode(errors="replace") if isinstance(err, bytes) else err)[-3000:]
        lines = out.read_text(encoding="utf-8").splitlines() if out.exists() else []
    results = [BlockResult(**json.loads(line)) for line in lines]
    if len(results) < len(blocks):
        where = blocks[len(results)].id
        results.append(BlockResult("failed", f"{where}: the page's process ended while running this block ({died or 'no result'}):\n{tail}"))
        results += [BlockResult("failed", f"{b.id}: not run: the page's process ended at {where}") for b in blocks[len(results):]]
    return results


def _main(argv: list[str]) -> int:
    """Child process: run every block of one page, one JSON result line each, flushed as it goes."""
    root, page, out, workdir = Path(argv[0]), argv[1], Path(argv[2]), Path(argv[3])
    blocks = read_blocks(root / page, root)
    run = PageRun(root, blocks, workdir)
    try:
        with out.open("w", encoding="utf-8") as f:
            for block in blocks:
                r = run.result(block)
                f.write(json.dumps({"status": r.status, "message": r.message}) + "\n")
                f.flush()
    finally:
        run.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
