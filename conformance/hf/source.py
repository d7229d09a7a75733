"""Reading a transformers family's modeling source: its rotary classes, the apply function its attention calls.

Used by :mod:`conformance.hf.truth` to find, without running a model, (a) the rotary-embedding class
the text model builds, (b) whether the model builds it for this config (``self.rotary_emb = X(config)
if config.position_embedding_type == "rope" else None``) and (c) which module-level apply function the
attention's ``forward`` calls (``if self.config.rope_interleave: apply_rotary_pos_emb_interleave(...)``).
Conditions are evaluated against the HF config object with a tiny evaluator that understands only
attribute reads of ``config`` / ``self.config``, constants, comparisons, ``not``/``and``/``or`` and
``getattr(config, name, default)``; anything else is "cannot tell" (``None``), never a guess. Given an
``instance`` (an attention built for one layer, on the meta device), ``self.<attr>`` reads that
instance's plain attribute (``self.is_sliding``, ``self.sliding_window``), so a per-layer condition
(``if self.is_local_attention: apply_rotary_pos_emb(...)``) is evaluated for that layer; given
``names``, a bare name (a loop index ``layer_idx``) reads its bound value.
Nothing here imports transformers itself: callers pass the imported modeling modules.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["classes_named", "rotary_assignment", "attention_apply_calls", "evaluate", "UNKNOWN", "layer_classes",
           "classes_built"]

#: Returned by :func:`evaluate` when an expression is outside the tiny language.
UNKNOWN = object()
#: An instance attribute holding a module or tensor: known not to be None, nothing else.
_PRESENT = object()

_NOT_TEXT = ("Vision", "Visual", "Audio", "Image", "Patch", "Speech", "Talker", "Video", "Encoder2D", "Vit")


def classes_named(modules: list[ModuleType], suffix: str) -> list[type]:
    """Classes defined in ``modules`` whose name ends with ``suffix`` (source order)."""
    out: list[type] = []
    for mod in modules:
        for name, obj in vars(mod).items():
            if inspect.isclass(obj) and obj.__module__ == mod.__name__ and name.endswith(suffix) and obj not in out:
                out.append(obj)
    return out


def is_text_name(name: str) -> bool:
    """A class name that is not a vision/audio/... part (``GlmImageTextAttention`` is text)."""
    return "Text" in name or not any(tag in name for tag in _NOT_TEXT)


def _tree(fn: Callable[..., Any]) -> ast.Module | None:
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None


def _plain(value: Any) -> bool:
    """A value the evaluator may compare: None, bool, number, string, or a tuple/list/set/dict of them."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (tuple, list, set, frozenset)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(_plain(k) and _plain(v) for k, v in value.items())
    return False


def evaluate(node: ast.AST, config: Any, instance: Any = None, names: Mapping[str, Any] | None = None) -> Any:
    """Value of a condition over ``config`` / ``self.config``; :data:`UNKNOWN` when outside the language.

    ``self.<attr>`` reads ``instance``'s attribute when it has one holding a plain value (None, bool,
    number, string or containers of them), else ``config.<attr>``; an instance attribute holding a module
    or tensor is known only to be ``is not None``; a bare name reads ``names``."""
    value = _value(node, config, instance, names)
    return UNKNOWN if value is _PRESENT else value


def _value(node: ast.AST, config: Any, instance: Any, names: Mapping[str, Any] | None) -> Any:
    """:func:`evaluate`, where :data:`_PRESENT` may stand for an instance's module or tensor."""
    def ev(sub: ast.AST) -> Any:
        return _value(sub, config, instance, names)

    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return names[node.id] if names is not None and node.id in names else UNKNOWN
    if isinstance(node, ast.Attribute):
        base = node.value
        is_config = (isinstance(base, ast.Name) and base.id == "config") or (
            isinstance(base, ast.Attribute) and base.attr == "config" and isinstance(base.value, ast.Name)
            and base.value.id == "self")
        if is_config:
            return getattr(config, node.attr, None)
        if isinstance(base, ast.Name) and base.id == "self":
            attrs = _attributes(instance) if instance is not None else {}
            if node.attr in attrs:
                value = attrs[node.attr]
                return value if _plain(value) else _PRESENT  # a module or tensor: only ``is None`` is known
            if hasattr(config, node.attr):
                return getattr(config, node.attr)  # self.position_embedding_type = config.position_embedding_type
        return UNKNOWN
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
        name = node.args[1] if len(node.args) in (2, 3) else None
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            target = node.args[0]
            if (isinstance(target, ast.Name) and target.id == "config") or (
                    isinstance(target, ast.Attribute) and target.attr == "config"):
                default = ev(node.args[2]) if len(node.args) == 3 else None
                return getattr(config, name.value, default)
        return UNKNOWN
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        value = ev(node.operand)
        return UNKNOWN if value is UNKNOWN or value is _PRESENT else (not value)
    if isinstance(node, ast.BoolOp):
        values = [ev(v) for v in node.values]
        if any(v is UNKNOWN or v is _PRESENT for v in values):
            return UNKNOWN
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [ev(v) for v in node.elts]
        return UNKNOWN if any(v is UNKNOWN or v is _PRESENT for v in items) else tuple(items)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = ev(node.left), ev(node.comparators[0])
        if left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        op = node.ops[0]
        if left is _PRESENT or right is _PRESENT:
            other = right if left is _PRESENT else left
            if other is None and isinstance(op, (ast.Is, ast.IsNot)):
                return isinstance(op, ast.IsNot)
            return UNKNOWN
        table = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Is: lambda a, b: a is b,
                 ast.IsNot: lambda a, b: a is not b, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
        for kind, fn in table.items():
            if isinstance(op, kind):
                try:
                    return fn(left, right)
                except TypeError:
                    return UNKNOWN
    return UNKNOWN


def _attributes(instance: Any) -> dict[str, Any]:
    """The instance's own attributes: ``vars`` plus, for an ``nn.Module``, its submodules, parameters and
    buffers (a submodule set to None is None)."""
    try:
        out = dict(vars(instance))
    except TypeError:
        return {}
    for store in ("_modules", "_parameters", "_buffers"):
        if isinstance(out.get(store), dict):
            out.update(out[store])
    return out


def rotary_assignment(classes: list[type], config: Any) -> tuple[str | None, bool | None]:
    """``(class name, built?)`` from ``self.rotary_emb(eddings) = X(...)`` in the ``__init__`` of ``classes``.

    ``if`` statements and ``X(config) if cond else None`` are followed when their condition evaluates:
    ``built`` is False when the branch taken for this config builds nothing, None when a condition cannot
    be evaluated; ``(None, None)`` when no class assigns a rotary attribute.
    """
    for cls in classes:
        tree = _tree(vars(cls)["__init__"]) if "__init__" in vars(cls) else None
        if tree is None or not tree.body or not isinstance(tree.body[0], ast.FunctionDef):
            continue
        found = _assignment(tree.body[0].body, config)
        if found is not None:
            return found
    return None, None


def _assignment(stmts: list[ast.stmt], config: Any) -> tuple[str | None, bool | None] | None:
    set_none = False  # ``self.rotary_emb = None`` first, maybe replaced under an ``if`` below
    for stmt in stmts:
        if isinstance(stmt, ast.If):
            cond = evaluate(stmt.test, config)
            if cond is UNKNOWN:
                inner = _assignment(stmt.body, config) or _assignment(stmt.orelse, config)
                if inner is not None:
                    return inner[0], None
                continue
            inner = _assignment(stmt.body if cond else stmt.orelse, config)
            if inner is not None:
                return inner
            other = _assignment(stmt.orelse if cond else stmt.body, config)
            if other is not None:
                return other[0], False  # only the branch not taken builds it
            continue
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            continue
        target = stmt.targets[0]
        if not (isinstance(target, ast.Attribute) and target.attr in ("rotary_emb", "rotary_embedding",
                                                                       "rotary_embeddings")):
            continue
        value = stmt.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            return value.func.id, True
        if isinstance(value, ast.IfExp):
            cond = evaluate(value.test, config)
            name = next((part.func.id for part in (value.body, value.orelse)
                         if isinstance(part, ast.Call) and isinstance(part.func, ast.Name)), None)
            if cond is UNKNOWN:
                return name, None
            return name, isinstance(value.body if cond else value.orelse, ast.Call)
        if isinstance(value, ast.Constant) and value.value is None:
            set_none = True
    return (None, False) if set_none else None


def attention_apply_calls(attention: type, config: Any, names: set[str], instance: Any = None) -> tuple[list[str], bool]:
    """Module-level functions in ``names`` that ``attention.forward`` calls for this config.

    Branches of an ``if`` whose test evaluates are followed (``self.<attr>`` read from ``instance``,
    one layer's attention, when given); the second result is False when a test could not be evaluated
    and both branches called a function (then both are listed).
    """
    tree = _tree(vars(attention)["forward"]) if "forward" in vars(attention) else None
    if tree is None:
        return [], True
    found: list[str] = []
    certain = True

    def visit(stmts: list[ast.stmt]) -> None:
        nonlocal certain
        for stmt in stmts:
            if isinstance(stmt, ast.If):
                cond = evaluate(stmt.test, config, instance)
                if cond is UNKNOWN:
                    before = len(found)
                    visit(stmt.body)
                    visit(stmt.orelse)
                    if len(found) > before:
                        certain = False
                else:
                    visit(stmt.body if cond else stmt.orelse)
                continue
            blocks = [getattr(stmt, f) for f in ("body", "orelse", "finalbody") if isinstance(getattr(stmt, f, None), list)]
            blocks += [h.body for h in getattr(stmt, "handlers", [])]
            if blocks:  # a for/while/with/try: its own expressions, then its blocks with their ifs followed
                for value in ast.iter_child_nodes(stmt):
                    if not isinstance(value, (ast.stmt, ast.excepthandler)):
                        collect(value)
                for block in blocks:
                    visit(block)
            else:
                collect(stmt)

    def collect(node: ast.AST) -> None:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in names:
                if sub.func.id not in found:
                    found.append(sub.func.id)

    body = tree.body[0].body if tree.body and isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) else []
    visit(body)
    return found, certain


def _init_body(cls: type) -> list[ast.stmt]:
    tree = _tree(vars(cls)["__init__"]) if "__init__" in vars(cls) else None
    if tree is None or not tree.body or not isinstance(tree.body[0], ast.FunctionDef):
        return []
    return tree.body[0].body


def _called_classes(node: ast.AST) -> list[str]:
    """Names called as ``Name(...)`` inside ``node`` that look like classes (capitalised), source order."""
    out: list[str] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id[:1].isupper():
            if sub.func.id not in out:
                out.append(sub.func.id)
    return out


def layer_classes(model: type, config: Any, count: int) -> list[str] | None:
    """Per decoder layer, the layer class ``model.__init__`` builds, when it picks one per layer index.

    Reads a loop ``for i in range(...)`` whose body branches on ``i`` (Mllama: ``if layer_idx in
    self.cross_attention_layers: MllamaCrossAttentionDecoderLayer(...) else MllamaSelfAttentionDecoderLayer``)
    and evaluates the branch for ``i = 0 .. count - 1``. None when there is no such loop, or a branch
    cannot be evaluated or builds no single ``*Layer`` class.
    """
    for loop in ast.walk(ast.Module(body=_init_body(model), type_ignores=[])):
        if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Name)):
            continue
        index = loop.target.id
        branches = [s for s in loop.body if isinstance(s, ast.If) and any(
            isinstance(n, ast.Name) and n.id == index for n in ast.walk(s.test))]
        if not branches:
            continue
        out: list[str] = []
        for i in range(count):
            stmts: list[ast.stmt] = list(loop.body)
            while True:  # follow the if/elif chain on the index
                branch = next((s for s in stmts if s in branches or (isinstance(s, ast.If) and any(
                    isinstance(n, ast.Name) and n.id == index for n in ast.walk(s.test)))), None)
                if branch is None:
                    break
                cond = evaluate(branch.test, config, names={index: i})
                if cond is UNKNOWN:
                    return None
                stmts = branch.body if cond else branch.orelse
            built = [n for s in stmts for n in _called_classes(s) if n.endswith("Layer")]
            if len(built) != 1:
                return None
            out.append(built[0])
        return out
    return None


def classes_built(cls: type) -> list[str]:
    """Class names called in ``cls.__init__`` (the attention a decoder layer builds, its MLP, norms)."""
    return [n for s in _init_body(cls) for n in _called_classes(s)]
