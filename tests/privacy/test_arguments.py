"""The argument checks (dponline.privacy.arguments): by-hand cases for each check, and
hypothesis properties for the array check (what it accepts comes back unchanged, bit for bit;
anything non-finite, complex or non-numeric is refused in one line naming the argument)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dponline.privacy.arguments import (
    ArgumentError,
    checked_count,
    checked_flag,
    checked_generator,
    checked_generators,
    checked_int_array,
    checked_nonnegative,
    checked_nonnegative_int,
    checked_positive,
    checked_probability,
    checked_real_array,
    checked_round,
    saved_field,
)
from dponline.rng import generator_state, replica_generators


def _one_line_naming(err: pytest.ExceptionInfo, name: str) -> None:
    message = str(err.value)
    assert "\n" not in message and name in message, message


def test_an_argument_error_is_both_a_value_error_and_a_type_error():
    # callers that caught either before the checks moved here still catch every refusal
    assert issubclass(ArgumentError, ValueError) and issubclass(ArgumentError, TypeError)


@pytest.mark.parametrize("value", [1, 7, np.int64(3), np.uint8(2)])
def test_counts_accept_integers_of_any_kind(value):
    assert checked_count("n", value) == int(value) and type(checked_count("n", value)) is int


@pytest.mark.parametrize("value", [0, -2, 2.0, 2.5, True, "3", None, np.float64(3.0), 1j])
def test_counts_refuse_everything_else_naming_the_argument(value):
    with pytest.raises(ArgumentError, match=r"^horizon must be a positive integer, got ") as err:
        checked_count("horizon", value)
    _one_line_naming(err, "horizon")


def test_non_negative_integers_take_zero_only_beyond_counts():
    assert checked_nonnegative_int("k", 0) == 0
    with pytest.raises(ArgumentError, match="k must be a non-negative integer, got -1"):
        checked_nonnegative_int("k", -1)


@pytest.mark.parametrize("value", [0.5, 3, np.float32(0.25), Fraction(1, 3), np.array(2.0)])
def test_positive_reals_of_any_kind(value):
    assert checked_positive("eta", value) == float(value)


@pytest.mark.parametrize(
    "value", [0.0, -1.0, math.inf, math.nan, True, "0.5", 0.5 + 0j, None, np.array([1.0])]
)
def test_positive_reals_refuse_the_rest(value):
    with pytest.raises(ArgumentError, match=r"^eta must be a finite positive number, got "):
        checked_positive("eta", value)


def test_infinity_only_where_the_caller_allows_it():
    assert checked_positive("eta", math.inf, infinite_ok=True) == math.inf
    with pytest.raises(ArgumentError, match="eta must be a positive number \\(inf allowed\\)"):
        checked_positive("eta", math.nan, infinite_ok=True)
    assert checked_nonnegative("lam", 0.0) == 0.0
    with pytest.raises(ArgumentError, match="lam must be finite and non-negative, got inf"):
        checked_nonnegative("lam", math.inf)


def test_probabilities_open_and_closed():
    assert checked_probability("delta", 1e-6) == 1e-6
    for bad in (0.0, 1.0, -0.1, math.nan, "0.1"):
        with pytest.raises(ArgumentError, match=r"delta must lie in \(0, 1\)"):
            checked_probability("delta", bad)
    assert checked_probability("p", 0.0, closed=True) == 0.0
    assert checked_probability("p", 1.0, closed=True) == 1.0
    with pytest.raises(ArgumentError, match=r"p must lie in \[0, 1\], got 1.5"):
        checked_probability("p", 1.5, closed=True)


def test_arrays_are_converted_as_numpy_would_and_float64_is_not_copied():
    x = np.array([0.5, 1.0])
    assert checked_real_array("loss", x) is x
    assert checked_real_array("loss", [1, 2], (2,)).dtype == np.float64
    assert checked_real_array("loss", np.array([True, False])).tolist() == [1.0, 0.0]
    assert checked_real_array("loss", [Fraction(1, 2)]).tolist() == [0.5]  # numbers as objects
    assert checked_real_array("loss", 3.0, ()).shape == ()


@pytest.mark.parametrize(
    "value, says",
    [
        (np.array([0.5, 1j]), "must be real, got complex values"),
        (np.array(["0.5", "1"]), "must be real numbers, got <U3 values"),  # numpy would parse
        ("0.5", "must be real numbers, got the string '0.5'"),
        (b"0.5", "must be real numbers, got the string"),
        (np.array([0.5, None], dtype=object), "must be real numbers"),
        (np.array([0.5, 1j], dtype=object), "must be real numbers"),
        ([[1.0, 2.0], [3.0]], "must be an array of real numbers"),  # ragged
        ({"a": 1}, "must be real numbers"),
    ],
)
def test_non_numeric_input_is_refused_in_one_line_never_by_numpy(value, says):
    with pytest.raises(ArgumentError, match=rf"^loss {says}") as err:
        checked_real_array("loss", value, (2,))
    _one_line_naming(err, "loss")


def test_wrong_shapes_and_non_finite_values_name_the_shape_and_the_value():
    with pytest.raises(
        ArgumentError, match=r"^loss must have shape \(3,\) or \(2, 3\), got \(4,\)$"
    ):
        checked_real_array("loss", np.zeros(4), (3,), (2, 3))
    with pytest.raises(ArgumentError, match=r"^loss must be finite, got nan \(NaN and infinity"):
        checked_real_array("loss", [0.0, math.nan])
    with pytest.raises(ArgumentError, match="got -inf"):
        checked_real_array("loss", [0.0, -math.inf])
    assert np.isnan(checked_real_array("loss", [math.nan], finite=False)).all()
    big = np.arange(400.0).reshape(20, 20) + 0.5j  # a long repr stays on one line
    with pytest.raises(ArgumentError) as err:
        checked_real_array("loss", big)
    assert "\n" not in str(err.value) and len(str(err.value)) < 200


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)))
def test_a_real_array_is_accepted_exactly_when_finite_and_unchanged(x):
    if np.isfinite(x).all():
        out = checked_real_array("x", x, x.shape)
        assert out is x  # no copy, the same bits
    else:
        with pytest.raises(ArgumentError, match=r"^x must be finite, got "):
            checked_real_array("x", x, x.shape)


@given(
    hnp.arrays(np.complex128, hnp.array_shapes(max_dims=2, max_side=3)),
    st.sampled_from([None, (2,)]),
)
def test_any_complex_array_is_refused_even_with_zero_imaginary_parts(z, shape):
    shapes = () if shape is None else (shape,)
    with pytest.raises(ArgumentError, match=r"^z must be real, got complex values"):
        checked_real_array("z", z, *shapes)


def test_integer_arrays_are_integers_in_range():
    assert checked_int_array("arms", np.array([0, 2]), (2,), 0, 3).tolist() == [0, 2]
    with pytest.raises(ArgumentError, match="arms must be integers, got float64"):
        checked_int_array("arms", np.array([0.0, 2.0]), (2,), 0, 3)  # never rounded down
    with pytest.raises(ArgumentError, match=r"arms must have shape \(2,\), got \(3,\)"):
        checked_int_array("arms", np.array([0, 1, 2]), (2,))
    with pytest.raises(ArgumentError, match=r"arms must lie in \[0, 2\]"):
        checked_int_array("arms", np.array([0, 3]), (2,), 0, 3)


def test_saved_state_fields():
    assert saved_field({"t": 3}, "t") == 3
    with pytest.raises(ArgumentError, match=r"saved state has no 'acted' \(keys \['t'\]\)"):
        saved_field({"t": 3}, "acted")
    with pytest.raises(ArgumentError, match="a saved state must be a dict, got list"):
        saved_field([3], "t")
    assert checked_round(np.int64(4), 4) == 4
    for bad in (5, -1, 2.0, True, "2"):
        with pytest.raises(ArgumentError, match=r"saved round counter t must be an integer in"):
            checked_round(bad, 4)
    assert checked_flag("saved acted", np.bool_(True)) is True
    with pytest.raises(ArgumentError, match="saved acted must be True or False, got 1"):
        checked_flag("saved acted", 1)


def test_saved_generators_resume_the_stream_or_are_refused_in_one_line():
    gen = np.random.default_rng(5)
    state = generator_state(gen)
    assert checked_generator("saved rng", state).random() == gen.random()
    for bad in ({"bit_generator": "PCG64"}, {"bit_generator": "os.system"}, [1, 2], None):
        with pytest.raises(
            ArgumentError, match=r"^saved rng is not a saved generator state"
        ) as err:
            checked_generator("saved rng", bad)
        _one_line_naming(err, "saved rng")


def test_saved_replica_generators_are_a_list_of_the_replicas_states():
    gens = replica_generators(3, 2)
    states = [generator_state(g) for g in gens]
    again = checked_generators("saved generators", states, 2)
    assert [g.random() for g in again] == [g.random() for g in gens]
    for bad, says in (
        (states[:1], "a list of 2"),
        ("x", "a list of 2"),
        ([states[0], None], r"\[1\]"),
    ):
        with pytest.raises(ArgumentError, match=f"^saved generators.*{says}") as err:
            checked_generators("saved generators", bad, 2)
        _one_line_naming(err, "saved generators")
