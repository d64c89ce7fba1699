"""SymbolicDim expressions: canonical form, equality, evaluation, substitution."""

import pytest

from onnx_stablehlo.frontend.shapes import SymbolicDim, ceil_div, floor_div, format_shape, is_static, simplify, symbols_of

batch, seq, h = SymbolicDim("batch"), SymbolicDim("seq"), SymbolicDim("h")


def test_symbol_has_a_name_and_expressions_do_not():
    assert batch.name == "batch"
    assert (batch + 1).name is None
    with pytest.raises(ValueError):
        SymbolicDim("")


@pytest.mark.parametrize(
    "left,right",
    [
        ((seq + 1) * 2, 2 * seq + 2),
        (batch * seq, seq * batch),
        (seq + seq, 2 * seq),
        (batch - batch + 3, 3),
        ((batch + 1) * (batch - 1), batch * batch - 1),
        (floor_div(4 * seq + 8, 4), seq + 2),
        (ceil_div(h, 1), h),
    ],
    ids=["distribute", "commute", "collect", "cancel-to-int", "expand", "exact-div", "div-by-one"],
)
def test_equal_expressions_compare_equal(left, right):
    assert left == right
    assert hash(simplify(left)) == hash(simplify(right))


def test_different_expressions_differ():
    assert seq + 1 != seq + 2
    assert floor_div(h, 32) != floor_div(h, 16)
    assert batch != seq


def test_constant_expressions_become_ints():
    assert isinstance(simplify(seq - seq), int)
    assert (seq * 0) == 0 and isinstance(seq * 0, int)
    assert is_static((2, seq - seq + 3)) and not is_static((2, seq))


@pytest.mark.parametrize("value", [1, 31, 32, 33, 100])
def test_floor_and_ceil_division_evaluate_like_python(value):
    assert floor_div(h, 32).evaluate({"h": value}) == value // 32
    assert ceil_div(h, 32).evaluate({"h": value}) == -(-value // 32)
    assert (h % 32).evaluate({"h": value}) == value % 32
    assert floor_div(2 * h + 1, 4).evaluate({"h": value}) == (2 * value + 1) // 4


def test_evaluate_names_missing_symbol():
    with pytest.raises(KeyError, match="symbol 'seq' has no binding"):
        (batch * seq).evaluate({"batch": 2})


def test_substitute_binds_some_symbols():
    expr = batch * seq + floor_div(seq, 2)
    assert expr.substitute({"seq": 8}) == 8 * batch + 4
    assert expr.substitute({"batch": 2, "seq": 8}) == 20
    assert expr.substitute({"seq": h + 1}) == batch * h + batch + floor_div(h + 1, 2)


def test_symbols_and_printing():
    assert symbols_of((batch, 3, floor_div(seq + h, 2))) == {"batch", "seq", "h"}
    assert str(2 * seq + 1) == "2*seq + 1"
    assert str(batch - 1) == "batch - 1"
    assert str(ceil_div(h, 32)) == "floor((h + 31) / 32)"
    assert format_shape((batch, 4, seq + 1)) == "[batch, 4, seq + 1]"


def test_division_needs_positive_int():
    with pytest.raises(ValueError, match="positive int divisor"):
        floor_div(seq, 0)


def test_module_doctests_pass():
    import doctest

    from onnx_stablehlo.frontend import shapes

    assert doctest.testmod(shapes).failed == 0


def test_max_of_dims_for_broadcasting():
    from onnx_stablehlo.frontend.shapes import sym_max

    assert sym_max(3, 5) == 5
    assert sym_max(batch, 1) == batch and sym_max(1, batch) == batch
    assert sym_max(batch, batch) == batch
    both = sym_max(batch, seq)
    assert both == sym_max(seq, batch)
    assert both.evaluate({"batch": 1, "seq": 7}) == 7
    assert str(both) == "max(batch, seq)"
    assert both.substitute({"batch": 1, "seq": 4}) == 4


def test_dim_equality_holds_fails_or_is_a_broadcast():
    from onnx_stablehlo.frontend.shapes import DimEquality

    equality = DimEquality(SymbolicDim("s1"), 2 * SymbolicDim("half"), "'add'")
    assert equality.holds({"s1": 8, "half": 4}) is True
    assert equality.holds({"s1": 8, "half": 3}) is False
    assert DimEquality(SymbolicDim("a"), SymbolicDim("b"), "'add'").holds({"a": 5, "b": 1}) is None
    assert str(equality) == "s1 == 2*half (node 'add')"
