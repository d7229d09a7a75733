"""The backend protocol: what an implementation under test offers the judge.

A backend is any object with ``name``, ``capabilities`` (:class:`Capabilities`),
``supports(case) -> True | reason`` and any of the stages::

    inv_freq(spec, seq_len) -> (inv_freq, attention_factor)
    cos_sin(spec, positions) -> (cos, sin)                  # each [..., n]
    apply(x, cos, sin, spec) -> y
    forward(x, positions, spec, cu_seqlens=None) -> y       # bshd, or thd with cu_seqlens
    backward(grad, positions, spec, cu_seqlens=None) -> grad_x

and, declared in ``Capabilities.call_forms``, the same stages (apply, forward, backward) called in
another form: in place (``forward_(x, positions, spec, cu_seqlens=None)`` rotates ``x`` in its own
memory), q with k (``forward_qk(q, k, positions, spec, cu_seqlens=None[, k_spec=...]) -> (q_out,
k_out)``; ``apply_qk(q, k, cos, sin, spec)``), or both (``forward_qk_``); ``k_spec`` is passed only
when k has its own head dim (``qk_shapes`` ``head_dims``). ``Capabilities.layouts`` says which
non-contiguous memory x (q, k) may come in (:mod:`conformance.calls.memory`).

Arrays cross the boundary as NumPy (any float dtype; bfloat16 via ml_dtypes). The
judge passes ``x``/``grad``/``cos``/``sin`` in the case dtype and positions as int64;
the backend returns its own dtype (the judge widens to float64 to compare).
"not supported" is its own status: :meth:`BaseBackend.supports` returns a reason
string, never raises, for anything outside the declared capabilities.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from roperef.spec import PAIRINGS, SCALING_TYPES

from ..cases.case import GoldenCase, outside_interface
from ..cases.form import FORM_STAGES, form_method
from ..vocabulary import CALL_FORMS, DTYPES, FEATURES, STAGES
from .capability_check import checked_fields

__all__ = ["Capabilities", "Backend", "BaseBackend", "Declined", "backend_stages", "backend_methods",
           "assumed_capabilities", "declaration_notes", "OUTSIDE_MESSAGES"]

_ALL_FEATURES = frozenset(FEATURES)


@dataclass(frozen=True)
class Capabilities:
    """What a backend declares about itself (used by ``supports`` and by the tolerance model).

    ``angle_dtype``: the dtype its inv_freq and angles ``p*w`` are computed in.
    ``table_dtype``: the dtype of its cos/sin tables and the multiply; ``"input"`` means the
    case dtype (engines that cast tables to bf16/fp16 inputs).
    ``applies_attention_factor``: whether ``s`` is folded into its output (else the judge
    compares against ``expected / s``).
    ``max_position``: the largest position it can take (a table of ``max_position + 1`` rows, int32
    positions: ``2**31 - 1``); a case with a larger position is NOT_SUPPORTED. None: no limit.
    ``shared_tables``: its ``apply`` takes one ``cos``/``sin`` table for the whole batch; an apply case
    whose batch rows have different tables is NOT_SUPPORTED.
    ``layouts``: memory layouts x (q, k) may come in besides a fresh C-contiguous array
    (:data:`~conformance.vocabulary.LAYOUTS`: ``qkv``, ``bhtd``, ``fortran``, ``offset``); the judge
    checks that memory around the view stays untouched.
    ``call_forms``: ways to be called besides ``stage(x, ...) -> y`` (:data:`~conformance.vocabulary.CALL_FORMS`:
    ``inplace`` -> ``stage_(x, ...)``, ``qk`` -> ``stage_qk(q, k, ...)``, ``qk_inplace`` -> ``stage_qk_(q, k, ...)``),
    each judged for the stages that have the method.
    Every field is checked when the declaration is made: a word outside its vocabulary raises
    ``ValueError`` naming the field, the value and the allowed words; dtypes may be written as engines
    write them (``bf16``, ``fp16``, ``torch.bfloat16``, ``np.float32``, ``numpy.float32`` itself) and are
    stored as the judge's names (:mod:`conformance.backends.capability_check`).
    ``notes``: free text about the engine, shown in every report (console, Markdown, JUnit, JSON).
    ``qk_shapes``: how k may differ from q in a q+k call (:data:`~conformance.vocabulary.QK_SHAPES`: ``gqa``,
    ``mqa``, ``head_dims``); equal shapes are always judged.
    """

    stages: frozenset[str]
    pairings: frozenset[str] = frozenset(PAIRINGS)
    dtypes: frozenset[str] = frozenset(DTYPES)
    scaling_types: frozenset[str] = frozenset(SCALING_TYPES)
    features: frozenset[str] = _ALL_FEATURES
    angle_dtype: str = "float64"
    table_dtype: str = "float64"
    applies_attention_factor: bool = True
    notes: str = ""
    max_position: int | None = None
    shared_tables: bool = False
    layouts: frozenset[str] = frozenset()
    call_forms: frozenset[str] = frozenset()
    qk_shapes: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        """Check every field against its vocabulary; engine dtype spellings (``bf16``, ``torch.float16``,
        ``numpy.float32``) become the judge's names (:mod:`conformance.backends.capability_check`)."""
        for key, value in checked_fields(self).items():
            object.__setattr__(self, key, value)

    def to_dict(self) -> dict[str, Any]:
        return {
            "stages": sorted(self.stages),
            "pairings": sorted(self.pairings),
            "dtypes": sorted(self.dtypes),
            "scaling_types": sorted(self.scaling_types),
            "features": sorted(self.features),
            "angle_dtype": self.angle_dtype,
            "table_dtype": self.table_dtype,
            "applies_attention_factor": self.applies_attention_factor,
            "notes": self.notes,
            "max_position": self.max_position,
            "shared_tables": self.shared_tables,
            "layouts": sorted(self.layouts),
            "call_forms": sorted(self.call_forms),
            "qk_shapes": sorted(self.qk_shapes),
        }


class Declined(str):
    """A reason given by :meth:`BaseBackend.library_reason` or :meth:`BaseBackend.case_reason`: the
    backend declines the case through the channel made for it (a plain NOT_SUPPORTED, never an
    "inconsistent declaration"). A ``str``, so it prints, compares and pickles (to and from the
    ``--isolate`` worker) as its text."""

    __slots__ = ()


#: the NOT_SUPPORTED message for each kind of :func:`conformance.cases.case.outside_interface` (what: its detail)
OUTSIDE_MESSAGES = {
    "stage": "stage {what} not implemented",
    "features": "needs {what}",
    "max_position": "{what}",
    "shared_tables": "{what}",
}


@runtime_checkable
class Backend(Protocol):
    name: str
    capabilities: Capabilities

    def supports(self, case: GoldenCase) -> bool | str: ...


def backend_stages(backend: object) -> frozenset[str]:
    """The stages a backend object actually implements (callable attributes named like a stage).

    A stand-in for a backend living elsewhere (the ``--isolate`` worker's) says so with an
    ``implemented_stages`` attribute, reported by the process that loaded the real backend.
    """
    remote = getattr(backend, "implemented_stages", None)
    if remote is not None:
        return frozenset(remote)
    return frozenset(s for s in STAGES if callable(getattr(backend, s, None)))


def backend_methods(backend: object) -> frozenset[str]:
    """The call-form methods a backend implements (``forward_``, ``apply_qk``, ``forward_qk_``, ...:
    :func:`conformance.cases.form.form_method` of a stage and a CALL_FORMS word); a stand-in for a
    backend living elsewhere says so with an ``implemented_methods`` attribute."""
    remote = getattr(backend, "implemented_methods", None)
    if remote is not None:
        return frozenset(remote)
    names = (form_method(s, w) for s in FORM_STAGES for w in CALL_FORMS)
    return frozenset(n for n in names if callable(getattr(backend, n, None)))


@dataclass
class BaseBackend:
    """Convenience base: ``supports`` from the declared capabilities, :meth:`library_reason` and
    :meth:`case_reason`. Subclasses add stage methods, override ``library_reason`` when they need an
    optional library (or a GPU) and ``case_reason`` for case-specific limits the capabilities cannot
    express; they need not override ``supports``.

    ``name`` and ``capabilities`` may be dataclass fields of a subclass, constructor arguments, or
    plain class attributes (``class MyRope(BaseBackend): name = "my-rope"; capabilities =
    Capabilities(...)``): a value left at its default is taken from the class. With no declaration
    at all, ``capabilities`` are assumed (the stages the class implements, float64 angles and
    tables, everything else supported) and :func:`declaration_notes` says so in every report."""

    name: str = None  # type: ignore[assignment]  # None: the class attribute, else the class name
    capabilities: Capabilities = None  # type: ignore[assignment]  # None: the class attribute, else assumed
    #: True when no capabilities were declared and :func:`assumed_capabilities` supplied them
    capabilities_assumed: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        cls = type(self)
        if self.name is None:
            declared = getattr(cls, "name", None)
            self.name = declared if isinstance(declared, str) and declared else cls.__name__
        if self.capabilities is None:
            declared = getattr(cls, "capabilities", None)
            if isinstance(declared, Capabilities):
                self.capabilities = declared
            else:
                self.capabilities = assumed_capabilities(self)
                self.capabilities_assumed = True
        elif not isinstance(self.capabilities, Capabilities):
            raise TypeError(
                f"{cls.__name__}.capabilities={self.capabilities!r}: must be a "
                "conformance.backends.base.Capabilities"
            )

    def supports(self, case: GoldenCase) -> bool | str:
        if case.stage not in backend_stages(self):
            return f"stage {case.stage} not implemented"
        if case.form is not None and case.form.word is not None and case.form.method(case.stage) not in backend_methods(self):
            return f"method {case.form.method(case.stage)} not implemented"
        out = outside_interface(self.capabilities, case)
        if out is not None:
            kind, what = out
            return OUTSIDE_MESSAGES.get(kind, "{kind} {what} not supported").format(kind=kind, what=what)
        reason = self.library_reason() or self.case_reason(case)
        return Declined(reason) if reason else True

    def library_reason(self) -> str | None:
        """Why the implementation cannot run here at all (library not installed, no GPU), or None."""
        return None

    def case_reason(self, case: GoldenCase) -> str | None:
        """Why this particular case cannot be expressed (beyond the capabilities), or None.

        Called only after the capabilities and :meth:`library_reason` accepted the case, so it may
        import the library."""
        return None


def assumed_capabilities(backend: object) -> Capabilities:
    """What the judge assumes for a backend that declares no ``capabilities``: the stages it
    implements, every pairing, dtype, scaling type and feature, the call forms its methods implement
    (``forward_``: ``inplace``, ``forward_qk``: ``qk``, ...; q and k of equal shapes only), no layout
    but a fresh contiguous array, and angle/table dtypes and the attention factor from plain attributes
    ``angle_dtype``, ``table_dtype``, ``applies_attention_factor`` if it has them (float64, float64,
    True otherwise)."""
    methods = backend_methods(backend)
    return Capabilities(
        stages=backend_stages(backend),
        call_forms=frozenset(w for w in CALL_FORMS if any(form_method(s, w) in methods for s in FORM_STAGES)),
        angle_dtype=str(getattr(backend, "angle_dtype", "float64")),
        table_dtype=str(getattr(backend, "table_dtype", "float64")),
        applies_attention_factor=bool(getattr(backend, "applies_attention_factor", True)),
    )


def declaration_notes(backend: object) -> tuple[str, ...]:
    """Sentences for the report header when the backend's declaration may mislead the verdicts:
    capabilities assumed rather than declared, no stage declared, declared stages without a method."""
    caps = getattr(backend, "capabilities", None)
    if not isinstance(caps, Capabilities):
        return ()
    notes = []
    if getattr(backend, "capabilities_assumed", False):
        notes.append(
            f"no capabilities declared: judged as a {caps.angle_dtype} engine with {caps.table_dtype} tables "
            f"(stages {', '.join(s for s in STAGES if s in caps.stages) or 'none'}; every pairing, dtype, "
            "scaling and feature assumed supported); declare Capabilities(...) if that is not what it "
            "computes (docs/writing-a-backend.md)"
        )
    if not caps.stages:
        notes.append("declared capabilities are empty (no stage): every case will be NOT_SUPPORTED")
    elif not getattr(backend, "call_case", None):
        lacking = [s for s in STAGES if s in caps.stages and s not in backend_stages(backend)]
        if lacking:
            notes.append(
                f"declared stage(s) {', '.join(lacking)} have no method of that name: those cases are NOT_SUPPORTED"
            )
    return tuple(notes)
