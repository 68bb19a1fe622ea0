"""Every registered learner, on its test cases, at every calibration, gives the numbers recorded
in ``tests/data/fixed_seed_table.json.gz`` (``python -m tests.fixed_seed_table --write``):
a restructuring that means to change no result changes none. The tolerance (relative 1e-9)
admits only the rounding of reordered floating-point sums (BLAS threads, vectorised kernels);
a changed draw or formula moves numbers by far more."""

from __future__ import annotations

import numpy as np
import pytest

from tests import fixed_seed_table

RECORDED = fixed_seed_table.load()
HAN = RECORDED.pop(fixed_seed_table.HAN2024_QUICK)


def test_every_learner_is_recorded() -> None:
    now = {f"{n}|{i}|{c}" for n, i, c in fixed_seed_table.keys()}
    assert now == set(RECORDED), (
        f"learners added {sorted(now - set(RECORDED))}, removed {sorted(set(RECORDED) - now)}: "
        "record the table again (python -m tests.fixed_seed_table --write)"
    )


@pytest.mark.parametrize("key", sorted(RECORDED))
def test_same_numbers_as_recorded(key: str) -> None:
    name, index, calibration = key.split("|")
    got = fixed_seed_table.row(name, int(index), calibration)
    want = RECORDED[key]
    assert set(got) == set(want)
    for field, value in want.items():
        np.testing.assert_allclose(
            np.asarray(got[field], dtype=float),
            np.asarray(value, dtype=float),
            rtol=1e-9,
            atol=1e-12,
            equal_nan=True,
            err_msg=f"{key}: {field}",
        )


def test_han2024_quick_cells_as_recorded() -> None:
    got = fixed_seed_table.han2024_quick()
    assert set(got) == set(HAN)
    for cell, want in HAN.items():
        assert got[cell]["scale"] == want["scale"], cell
        assert got[cell]["proven_epsilon"] == pytest.approx(want["proven_epsilon"], rel=1e-12)
        np.testing.assert_allclose(got[cell]["subopt_runs"], want["subopt_runs"], rtol=1e-9)
