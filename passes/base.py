"""The pass base class: a frozen dataclass with a kebab-case ``name`` and typed options.

A pass is written as::

    @dataclasses.dataclass(frozen=True)
    class FoldConstantsPass(ModulePass):
        \"\"\"Replaces ops whose operands are all constants by one stablehlo.constant.\"\"\"

        name: ClassVar[str] = "fold-constants"

        max_elements: int = 65536
        \"\"\"Results with more elements than this stay unfolded.\"\"\"

        def run(self, module: ir.Module) -> PassResult:
            ...

Each dataclass field is an option, settable from a pipeline string as
``fold-constants{max-elements=1024}`` (field names in kebab-case). The docstring under a
field documents the option (``--list-passes`` and docs/passes.md show it). Supported option
types: ``bool``, ``int``, ``float``, ``str``, ``Literal[...]`` of strings (the choices are
listed on error) and ``tuple[str, ...]`` (a comma-separated list). A pass that must reject a
combination of values raises ``ValueError`` from ``__post_init__``; the pipeline parser
reports it with the pass name.
"""

from __future__ import annotations

import abc
import ast
import dataclasses
import functools
import inspect
import textwrap
import threading
import typing
from collections.abc import Mapping
from typing import Any, ClassVar

from jaxlib.mlir import ir

__all__ = ["ModulePass", "PassResult", "PassOption", "OptionValueError"]


@dataclasses.dataclass(frozen=True)
class PassResult:
    """What a pass reports after running.

    Attributes:
        modified: whether the module changed; ``None`` when the pass cannot tell (upstream
            MLIR passes run through jaxlib's pass manager).
        statistics: counters, e.g. how many times each rewrite pattern applied.
        notes: human-readable remarks (a pattern driver that hit its iteration cap, ...).
        failures: why rewrite patterns did not apply
            (:class:`~onnx_stablehlo.passes.patterns.PatternFailure`; for ``--debug-patterns``).
    """

    modified: bool | None
    statistics: Mapping[str, int] = dataclasses.field(default_factory=dict)
    notes: tuple[str, ...] = ()
    failures: tuple[Any, ...] = ()


@dataclasses.dataclass(frozen=True)
class PassOption:
    """One option of a pass, as the pipeline parser and the docs see it.

    Attributes:
        name: the kebab-case name used in pipelines (``max-elements``).
        field: the dataclass field (``max_elements``).
        type_text: the type as shown to users (``int``, ``bf16 | f16``, ``list of str``).
        default: the default value.
        doc: the field's docstring (empty when it has none).
    """

    name: str
    field: str
    type_text: str
    default: Any
    doc: str


class OptionValueError(ValueError):
    """A pipeline option value that does not fit the option's type."""


class ModulePass(abc.ABC):
    """Base of every pass: transforms one ``builtin.module`` in place.

    Subclasses are frozen dataclasses with a class-level kebab-case ``name``; their fields are
    the options. ``run`` returns a :class:`PassResult` saying whether the module changed.
    """

    name: ClassVar[str]

    @abc.abstractmethod
    def run(self, module: ir.Module) -> PassResult:
        """Transforms ``module`` in place; returns whether it changed."""

    # Options ----------------------------------------------------------------------------------

    @classmethod
    def options(cls) -> list[PassOption]:
        """The options of this pass, in declaration order."""
        return list(_options_of(cls))

    @classmethod
    def from_options(cls, values: Mapping[str, str]) -> ModulePass:
        """Builds the pass from option texts keyed by kebab-case name.

        Raises:
            KeyError: an unknown option name (the message is the name).
            OptionValueError: a value that does not fit its option's type, or that
                ``__post_init__`` rejected.
        """
        by_name = {option.name: option for option in cls.options()}
        hints = typing.get_type_hints(cls)
        kwargs: dict[str, Any] = {}
        for key, text in values.items():
            option = by_name.get(key)
            if option is None:
                raise KeyError(key)
            kwargs[option.field] = _convert(text, hints[option.field], key)
        try:
            return cls(**kwargs)
        except ValueError as exc:
            raise OptionValueError(str(exc)) from exc

    def pipeline_text(self) -> str:
        """This pass as pipeline text: the name, plus options that differ from their defaults."""
        parts = []
        for option in self.options():
            value = getattr(self, option.field)
            if value != option.default:
                parts.append(f"{option.name}={_format(value)}")
        return self.name + ("{" + " ".join(parts) + "}" if parts else "")

    @classmethod
    def summary(cls) -> str:
        """The first line of the pass docstring."""
        doc = inspect.getdoc(cls) or ""
        return doc.splitlines()[0] if doc else ""


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def _type_text(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return " | ".join(str(a) for a in typing.get_args(hint))
    if origin is tuple:
        return f"list of {typing.get_args(hint)[0].__name__}"
    return getattr(hint, "__name__", str(hint))


def _convert(text: str, hint: Any, option: str) -> Any:
    """Converts option text to the field's type (raises OptionValueError naming the option)."""
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        choices = typing.get_args(hint)
        if text not in choices:
            raise OptionValueError(
                f"option '{option}' must be one of {', '.join(map(str, choices))}; got '{text}'"
            )
        return text
    if origin is tuple:
        item = typing.get_args(hint)[0]
        items = [part.strip() for part in text.split(",") if part.strip()]
        return tuple(_convert(part, item, option) for part in items)
    if hint is bool:
        lowered = text.strip().lower()
        if lowered in ("true", "1", "yes", "on", ""):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise OptionValueError(f"option '{option}' expects true or false; got '{text}'")
    if hint is int:
        try:
            return int(text, 0)
        except ValueError:
            raise OptionValueError(f"option '{option}' expects an integer; got '{text}'") from None
    if hint is float:
        try:
            return float(text)
        except ValueError:
            raise OptionValueError(f"option '{option}' expects a number; got '{text}'") from None
    if hint is str:
        return text
    raise TypeError(f"option '{option}': unsupported option type {hint!r}")


_OPTIONS_LOCK = threading.Lock()
"""Serializes the first (uncached) reads of options: CPython 3.11's ``ast.parse`` from several
threads at once raises ``SystemError: AST constructor recursion depth mismatch``, and
CompiledModel runs pipelines from concurrent ``run`` calls."""


def _options_of(cls: type) -> tuple[PassOption, ...]:
    with _OPTIONS_LOCK:
        return _options_of_locked(cls)


@functools.cache
def _options_of_locked(cls: type) -> tuple[PassOption, ...]:
    if not dataclasses.is_dataclass(cls):
        return ()
    docs = _field_docstrings(cls)
    hints = typing.get_type_hints(cls)
    options = []
    for field in dataclasses.fields(cls):
        if field.default is not dataclasses.MISSING:
            default = field.default
        elif field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        else:
            default = None
        options.append(
            PassOption(
                name=field.name.replace("_", "-"),
                field=field.name,
                type_text=_type_text(hints[field.name]),
                default=default,
                doc=docs.get(field.name, ""),
            )
        )
    return tuple(options)


def _field_docstrings(cls: type) -> dict[str, str]:
    """Attribute docstrings (a string literal right under ``field: type = default``)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object or not dataclasses.is_dataclass(klass):
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        class_def = ast.parse(source).body[0]
        if not isinstance(class_def, ast.ClassDef):
            continue
        body = class_def.body
        for statement, following in zip(body, body[1:]):
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[statement.target.id] = inspect.cleandoc(following.value.value)
    return docs
