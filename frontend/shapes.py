"""Dimensions and shapes of ONNX values, with symbols.

A dim is an ``int`` or a :class:`SymbolicDim`: an integer expression over named symbols
(``batch``, ``seq``), kept in a canonical form so that equal expressions compare equal
structurally: a sum of integer-weighted products of atoms, where an atom is a symbol or a
floor division / modulo of an expression by a positive integer.

>>> seq = SymbolicDim("seq")
>>> (seq + 1) * 2 == 2 * seq + 2
True
>>> str(ceil_div(SymbolicDim("h"), 32))
'floor((h + 31) / 32)'
>>> (SymbolicDim("b") * 4 + seq).evaluate({"b": 2, "seq": 7})
15

Expressions that reduce to a constant come back as plain ints from :func:`simplify`, so a
shape is static exactly when every dim is an ``int``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Union

__all__ = [
    "SymbolicDim",
    "Dim",
    "Shape",
    "simplify",
    "ceil_div",
    "floor_div",
    "sym_max",
    "product",
    "exact_div",
    "is_static",
    "format_shape",
    "symbols_of",
    "evaluate_dim",
    "DimEquality",
    "DimAtom",
]

# An atom is a symbol name, ("floordiv" | "mod", expression, divisor) or ("max", expression, other).
_Atom = Union[str, tuple]
DimAtom = _Atom
# A monomial is a sorted tuple of (atom, power); () is the constant term.
_Monomial = tuple


def _atom_key(atom: _Atom) -> tuple:
    return (0, atom) if isinstance(atom, str) else (1, repr(atom))


class SymbolicDim:
    """An integer expression over named symbols; immutable and hashable.

    ``SymbolicDim("batch")`` is the symbol itself; ``+ - *`` with ints or other
    ``SymbolicDim``s, ``//`` and ``%`` by positive ints build expressions.
    """

    __slots__ = ("_terms", "_hash")

    def __init__(self, name: str | None = None, *, _terms: Mapping[_Monomial, int] | None = None) -> None:
        if _terms is None:
            if not name:
                raise ValueError("a SymbolicDim needs a name")
            _terms = {((name, 1),): 1}
        self._terms = {m: c for m, c in _terms.items() if c != 0}
        self._hash = hash(frozenset(self._terms.items()))

    # Construction ---------------------------------------------------------------------------

    @staticmethod
    def _of(value: Dim) -> SymbolicDim:
        if isinstance(value, SymbolicDim):
            return value
        return SymbolicDim(_terms={(): int(value)})

    @property
    def name(self) -> str | None:
        """The symbol's name when this is a single symbol, else ``None``."""
        if len(self._terms) == 1:
            ((monomial, coefficient),) = self._terms.items()
            if coefficient == 1 and len(monomial) == 1 and monomial[0][1] == 1 and isinstance(monomial[0][0], str):
                return monomial[0][0]
        return None

    @property
    def constant(self) -> int | None:
        """The value when the expression has no symbol, else ``None``."""
        if not self._terms:
            return 0
        if set(self._terms) == {()}:
            return self._terms[()]
        return None

    # Arithmetic -----------------------------------------------------------------------------

    def __add__(self, other: Dim) -> Dim:
        other = SymbolicDim._of(other)
        terms = dict(self._terms)
        for monomial, coefficient in other._terms.items():
            terms[monomial] = terms.get(monomial, 0) + coefficient
        return simplify(SymbolicDim(_terms=terms))

    __radd__ = __add__

    def __neg__(self) -> Dim:
        return simplify(SymbolicDim(_terms={m: -c for m, c in self._terms.items()}))

    def __sub__(self, other: Dim) -> Dim:
        return self + (-SymbolicDim._of(other))

    def __rsub__(self, other: Dim) -> Dim:
        return SymbolicDim._of(other) + (-self)

    def __mul__(self, other: Dim) -> Dim:
        other = SymbolicDim._of(other)
        terms: dict[_Monomial, int] = {}
        for m1, c1 in self._terms.items():
            for m2, c2 in other._terms.items():
                powers: dict[_Atom, int] = {}
                for atom, power in m1 + m2:
                    powers[atom] = powers.get(atom, 0) + power
                monomial = tuple(sorted(powers.items(), key=lambda ap: _atom_key(ap[0])))
                terms[monomial] = terms.get(monomial, 0) + c1 * c2
        return simplify(SymbolicDim(_terms=terms))

    __rmul__ = __mul__

    def __floordiv__(self, divisor: int) -> Dim:
        return floor_div(self, divisor)

    def __mod__(self, divisor: int) -> Dim:
        divisor = _positive(divisor)
        if divisor == 1:
            return 0
        if all(c % divisor == 0 for c in self._terms.values()):
            return 0
        return SymbolicDim(_terms={((("mod", self, divisor), 1),): 1})

    # Comparison and evaluation -------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if isinstance(other, int):
            return self.constant == other
        if not isinstance(other, SymbolicDim):
            return NotImplemented
        return self._terms == other._terms

    def __hash__(self) -> int:
        return self._hash

    def evaluate(self, bindings: Mapping[str, int]) -> int:
        """The value of the expression with every symbol bound.

        Raises:
            KeyError: a symbol has no binding (the message names it).
        """
        total = 0
        for monomial, coefficient in self._terms.items():
            product = coefficient
            for atom, power in monomial:
                product *= _evaluate_atom(atom, bindings) ** power
            total += product
        return total

    def terms(self) -> list[tuple[int, tuple[tuple[DimAtom, int], ...]]]:
        """The expression as a canonical sum of products: ``[(coefficient, factors), ...]``.

        Each factor is ``(atom, power)``; an atom is a symbol name, ``("floordiv", expr, d)`` or
        ``("mod", expr, d)`` (``expr`` a SymbolicDim, ``d`` a positive int), or
        ``("max", expr, other)``. ``()`` as the factors is the constant term. Code that
        rebuilds the expression elsewhere (as MLIR ops, as JAX dims) walks this.

        >>> (SymbolicDim("b") * 2 + 1).terms()
        [(2, (('b', 1),)), (1, ())]
        """
        return [(coefficient, monomial) for monomial, coefficient in self._terms.items()]

    def symbols(self) -> set[str]:
        """Every symbol name in the expression."""
        found: set[str] = set()
        for monomial in self._terms:
            for atom, _ in monomial:
                if isinstance(atom, str):
                    found.add(atom)
                else:
                    found |= atom[1].symbols()
                    if atom[0] == "max":
                        found |= atom[2].symbols()
        return found

    def substitute(self, bindings: Mapping[str, Dim]) -> Dim:
        """Replaces bound symbols by ints or expressions; unbound ones stay."""
        result: Dim = 0
        for monomial, coefficient in self._terms.items():
            product: Dim = coefficient
            for atom, power in monomial:
                if isinstance(atom, str):
                    value: Dim = bindings.get(atom, SymbolicDim(atom))
                elif atom[0] == "floordiv":
                    value = floor_div(_substitute(atom[1], bindings), atom[2])
                elif atom[0] == "max":
                    value = sym_max(_substitute(atom[1], bindings), _substitute(atom[2], bindings))
                else:
                    value = _substitute(atom[1], bindings) % atom[2]
                for _ in range(power):
                    product = product * value
            result = result + product
        return simplify(result)

    # Printing -------------------------------------------------------------------------------

    def __str__(self) -> str:
        if not self._terms:
            return "0"
        parts = []
        for monomial, coefficient in sorted(self._terms.items(), key=lambda mc: (len(mc[0]) == 0, str(mc[0]))):
            factors = [_format_atom(a) + (f"^{p}" if p != 1 else "") for a, p in monomial]
            if not factors:
                text = str(abs(coefficient))
            elif abs(coefficient) == 1:
                text = "*".join(factors)
            else:
                text = f"{abs(coefficient)}*" + "*".join(factors)
            sign = "-" if coefficient < 0 else "+"
            parts.append((sign, text))
        first_sign, first = parts[0]
        out = ("-" if first_sign == "-" else "") + first
        for sign, text in parts[1:]:
            out += f" {sign} {text}"
        return out

    def __repr__(self) -> str:
        return f"SymbolicDim({str(self)!r})"


Dim = Union[int, SymbolicDim]
Shape = tuple  # tuple[Dim, ...]


def _positive(divisor: int) -> int:
    if not isinstance(divisor, int) or divisor <= 0:
        raise ValueError(f"symbolic division needs a positive int divisor, got {divisor!r}")
    return divisor


def _substitute(expr: SymbolicDim, bindings: Mapping[str, Dim]) -> Dim:
    return expr.substitute(bindings)


def _evaluate_atom(atom: _Atom, bindings: Mapping[str, int]) -> int:
    if isinstance(atom, str):
        if atom not in bindings:
            raise KeyError(f"symbol '{atom}' has no binding")
        return int(bindings[atom])
    kind, expr, other = atom
    value = expr.evaluate(bindings)
    if kind == "max":
        return max(value, other.evaluate(bindings))
    return value // other if kind == "floordiv" else value % other


def _format_atom(atom: _Atom) -> str:
    if isinstance(atom, str):
        return atom
    kind, expr, divisor = atom
    if kind == "max":
        return f"max({expr}, {divisor})"
    return f"floor(({expr}) / {divisor})" if kind == "floordiv" and len(expr._terms) > 1 else (
        f"floor({expr} / {divisor})" if kind == "floordiv" else f"({expr}) mod {divisor}"
    )


def simplify(dim: Dim) -> Dim:
    """Returns an ``int`` for a constant expression, the expression otherwise."""
    if isinstance(dim, SymbolicDim):
        constant = dim.constant
        return constant if constant is not None else dim
    return int(dim)


def floor_div(dim: Dim, divisor: int) -> Dim:
    """``floor(dim / divisor)`` for a positive int divisor.

    Exact when every coefficient is a multiple of the divisor; otherwise whole multiples are
    taken out of the constant term only when the rest is divisible.
    """
    divisor = _positive(divisor)
    if isinstance(dim, int):
        return dim // divisor
    if divisor == 1:
        return dim
    if all(c % divisor == 0 for c in dim._terms.values()):
        return simplify(SymbolicDim(_terms={m: c // divisor for m, c in dim._terms.items()}))
    return SymbolicDim(_terms={((("floordiv", dim, divisor), 1),): 1})


def sym_max(a: Dim, b: Dim) -> Dim:
    """``max(a, b)``: an int when both are ints or the dims are equal, else a max atom.

    Numpy broadcasting of two unknown dims gives their max (one of them is 1, or they agree).
    """
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    if a == b:
        return a
    if isinstance(a, int) and a <= 1:
        return b
    if isinstance(b, int) and b <= 1:
        return a
    first, second = sorted((SymbolicDim._of(a), SymbolicDim._of(b)), key=str)
    return SymbolicDim(_terms={((("max", first, second), 1),): 1})


def product(dims: Sequence[Dim]) -> Dim:
    """The product of dims (an int when all are ints).

    >>> product([2, SymbolicDim("n"), 3])
    SymbolicDim('6*n')
    """
    total: Dim = 1
    for dim in dims:
        total = total * dim
    return simplify(total)


def exact_div(dim: Dim, divisor: Dim) -> Dim | None:
    """``dim / divisor`` when it divides exactly as expressions (``(6*b*s) / (2*s) = 3*b``).

    The divisor must be an int or a single term (a coefficient times symbols); returns ``None``
    when the division is not exact as written.
    """
    if isinstance(divisor, int):
        if divisor == 0:
            return None
        if isinstance(dim, int):
            return dim // divisor if dim % divisor == 0 else None
        if all(c % divisor == 0 for c in dim._terms.values()):
            return simplify(SymbolicDim(_terms={m: c // divisor for m, c in dim._terms.items()}))
        return None
    if len(divisor._terms) != 1:
        return None
    ((div_monomial, div_coefficient),) = divisor._terms.items()
    if div_coefficient == 0 or isinstance(dim, int):
        return None
    div_powers = dict(div_monomial)
    terms: dict = {}
    for monomial, coefficient in dim._terms.items():
        powers = dict(monomial)
        if coefficient % div_coefficient:
            return None
        for atom, power in div_powers.items():
            if powers.get(atom, 0) < power:
                return None
            powers[atom] -= power
            if powers[atom] == 0:
                del powers[atom]
        key = tuple(sorted(powers.items(), key=lambda ap: _atom_key(ap[0])))
        terms[key] = terms.get(key, 0) + coefficient // div_coefficient
    return simplify(SymbolicDim(_terms=terms))


def ceil_div(dim: Dim, divisor: int) -> Dim:
    """``ceil(dim / divisor)`` for a positive int divisor (as ``floor((dim + d - 1) / d)``)."""
    return floor_div(dim + (_positive(divisor) - 1), divisor)


def evaluate_dim(dim: Dim, bindings: Mapping[str, int]) -> int:
    """The int value of a dim under ``bindings``."""
    return dim if isinstance(dim, int) else dim.evaluate(bindings)


def symbols_of(shape: Sequence[Dim]) -> set[str]:
    """Every symbol used in a shape's dims."""
    found: set[str] = set()
    for dim in shape:
        if isinstance(dim, SymbolicDim):
            found |= dim.symbols()
    return found


def is_static(shape: Sequence[Dim]) -> bool:
    """True when every dim is an int.

    >>> is_static((2, 3)), is_static((SymbolicDim("n"), 3))
    (True, False)
    """
    return all(isinstance(d, int) for d in shape)


def format_shape(shape: Sequence[Dim]) -> str:
    """Formats a shape as ``[2, seq, 4]``."""
    return "[" + ", ".join(str(d) for d in shape) + "]"


@dataclasses.dataclass(frozen=True)
class DimEquality:
    """An equality of two dims that an op implies, assumed when lowering with symbols.

    Numpy broadcasting of two unknown dims ``a`` and ``b`` is valid only when they are equal or
    one is 1. The importer assumes ``a == b`` (so the result dim is ``a``, not ``max(a, b)``, and
    later shapes stay simple) and records the assumption; ``CompiledModel`` checks it against the
    feeds' sizes before reusing the symbolic artifact.

    Attributes:
        lhs: the dim that was kept (the representative).
        rhs: the dim merged into it.
        node: the ONNX node whose broadcast implied the equality.
    """

    lhs: Dim
    rhs: Dim
    node: str

    def holds(self, bindings: Mapping[str, int]) -> bool | None:
        """True/False under ``bindings``; None when one side is 1 (numpy broadcasting, not equality)."""
        left, right = evaluate_dim(self.lhs, bindings), evaluate_dim(self.rhs, bindings)
        if left == right:
            return True
        return None if 1 in (left, right) else False

    @property
    def where(self) -> str:
        """``node <name>`` (unnamed nodes are already described as ``node #3 producing 'y'``)."""
        return self.node if self.node.startswith("node ") else f"node {self.node}"

    def __str__(self) -> str:
        return f"{self.lhs} == {self.rhs} ({self.where})"
