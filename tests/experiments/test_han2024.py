"""``dponline reproduce han2024``: data of Han et al. App. C, SubOpt, scale selection on the
validation set, and the quick version end to end through the CLI."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from dponline.cli import main
from dponline.domains.lp_ball import LpBall
from dponline.experiments import han2024
from dponline.experiments.han2024 import (
    ALGORITHMS,
    PAPER_SUBOPT,
    Risk,
    Setting,
    Task,
    make_data,
    run_task,
    select_scale,
    subopt,
)
from dponline.privacy.guarantee import PrivacyGuarantee


@pytest.mark.parametrize("p", [1.5, math.inf])
@pytest.mark.parametrize("d", [5, 10])
def test_data_have_the_stated_norms(p, d):
    data = make_data(Setting(p, 300, d), seed=3, n_validation=400, n_test=500)
    q = 3.0 if p == 1.5 else 1.0
    assert LpBall(d, p).q == q
    np.testing.assert_allclose(LpBall(d, p).norm(data.theta_star), 1.0, rtol=1e-12)
    np.testing.assert_allclose(data.theta_star, data.theta_star[0])  # ones, normalised
    for x, n in ((data.x, 300), (data.x_validation, 400), (data.x_test, 500)):
        assert x.shape == (n, d)
        np.testing.assert_allclose(LpBall(d, q).norm(x), 1.0, rtol=1e-12)
    # y = <x, theta*> + N(0, 0.05^2): the residual sd is 0.05 up to sampling error (the
    # estimate of sd from 1,200 draws is within 15% except with probability < 1e-6)
    resid = np.concatenate(
        [
            data.y - data.x @ data.theta_star,
            data.y_validation - data.x_validation @ data.theta_star,
            data.y_test - data.x_test @ data.theta_star,
        ]
    )
    assert resid.std() == pytest.approx(0.05, rel=0.15)


def test_validation_and_test_sets_are_fresh_draws_and_deterministic():
    a = make_data(Setting(1.5, 100, 5), seed=1, n_validation=200, n_test=200)
    b = make_data(Setting(1.5, 100, 5), seed=1, n_validation=200, n_test=200)
    np.testing.assert_array_equal(a.x_test, b.x_test)
    assert not np.allclose(a.x_validation, a.x_test)
    assert not np.allclose(a.x[:100], a.x_validation[:100])


@pytest.mark.parametrize("p", [1.5, math.inf])
def test_subopt_is_zero_at_theta_star_and_one_at_zero(p):
    data = make_data(Setting(p, 50, 5), seed=0, n_validation=10, n_test=1000)
    test = Risk.from_samples(data.x_test, data.y_test)
    assert subopt(data.theta_star, test, data.theta_star) == pytest.approx(0.0, abs=1e-12)
    assert subopt(np.zeros(5), test, data.theta_star) == pytest.approx(1.0, abs=1e-12)
    theta = np.random.default_rng(0).normal(size=(3, 4, 5))
    direct = ((data.x_test @ theta[..., None])[..., 0] - data.y_test).__pow__(2).mean(-1)
    np.testing.assert_allclose(test(theta), direct, rtol=1e-10)


def test_select_scale_takes_the_least_mean_validation_risk():
    data = make_data(Setting(1.5, 50, 5), seed=0, n_validation=1000, n_test=10)
    val = Risk.from_samples(data.x_validation, data.y_validation)
    theta = np.zeros((4, 3, 5))
    theta[:, 1] = data.theta_star
    theta[0, 2] = data.theta_star  # best in one run only
    assert select_scale(theta, val) == 1


def _fake_baseline(best_index):
    def fit(x, y, *, step_scales, runs, rng, budget, p=None, **kwargs):
        d = x.shape[1]
        theta = np.zeros((runs, len(step_scales), d))
        theta[:, best_index] = han2024.true_parameter(d, p if p is not None else math.inf)
        return SimpleNamespace(
            theta=theta,
            privacy=PrivacyGuarantee(budget.epsilon, budget.delta),
            parameters={"k": 1},
        )

    return lambda name: fit


def test_the_scale_is_chosen_on_the_validation_set_never_the_test_set(monkeypatch):
    task = Task(Setting(1.5, 60, 5), "NoisySFW", "tight", 3, (0.3, 1.0, 3.0), 500, 700, 0)
    data = make_data(task.setting, seed=0, n_validation=500, n_test=700)
    seen = []
    real = han2024.select_scale

    def spy(theta, risk):
        seen.append(risk)
        return real(theta, risk)

    monkeypatch.setattr(han2024, "select_scale", spy)
    monkeypatch.setattr(han2024, "_baseline", _fake_baseline(best_index=2))
    result = run_task(task)
    assert len(seen) == 1
    (risk,) = seen
    validation = Risk.from_samples(data.x_validation, data.y_validation)
    test = Risk.from_samples(data.x_test, data.y_test)
    assert risk.size == 500 and risk.size != test.size
    np.testing.assert_allclose(risk.gram, validation.gram)
    np.testing.assert_allclose(risk.cross, validation.cross)
    assert result.scale == 3.0
    np.testing.assert_allclose(result.subopt, 0.0, atol=1e-12)


def test_algorithm_1_has_no_scale_and_its_curve_starts_at_one():
    task = Task(Setting(math.inf, 64, 5), "Algorithm 1", "tight", 4, (1.0,), 300, 300, 0)
    result = run_task(task)
    assert result.scale is None and result.validation_subopt is None
    assert result.curve is not None and result.curve.shape == (65,)
    assert result.curve[0] == pytest.approx(1.0)  # theta_0 = 0
    assert result.subopt.shape == (4,)
    assert result.privacy["epsilon"] <= 1.0 + 1e-9 and result.privacy["delta"] == 1 / 64


def test_paper_numbers_cover_the_settings_and_leave_localmd_out():
    keys = {(s.p, s.T, s.d) for s in han2024.settings()}
    assert set(PAPER_SUBOPT) == keys
    for (p, _, _), row in PAPER_SUBOPT.items():
        assert set(row) == set(ALGORITHMS[p]) - {"LocalMD"}
    assert PAPER_SUBOPT[(1.5, 2000, 10)]["Algorithm 1"] == (0.060, 0.032)  # Table 2


def test_quick_text_through_the_cli(tmp_path, capsys):
    assert main(["reproduce", "han2024", "--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("dponline reproduce han2024 --quick")
    assert "(epsilon, delta) = (1, 1/T)" in out
    assert 'Calibration "paper"' in out and 'Calibration "tight"' in out
    for alg in ("Algorithm 1", "NoisySFW", "LocalMD", "NoisySGD"):
        assert alg in out
    assert "clip" in out and "validation" in out and "fixed" in out
    assert (tmp_path / "algorithm1_subopt.png").stat().st_size > 0
    assert (tmp_path / "algorithm1_subopt.csv").read_text().startswith("p,T,d,calibration")


def test_quick_json_through_the_cli(tmp_path, capsys):
    assert main(["reproduce", "han2024", "--quick", "--json", "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert captured.err.startswith("dponline reproduce han2024")
    assert data["experiment"] == "han2024" and data["quick"] is True
    cells = data["cells"]
    assert len(cells) == 2 * (3 + 2)  # 2 settings, 2 calibrations, 3 + 2 algorithms
    keys = {
        "p",
        "T",
        "d",
        "algorithm",
        "calibration",
        "mean",
        "sd",
        "scale",
        "proven_epsilon",
        "proven_delta",
        "paper_mean",
        "paper_sd",
    }
    for c in cells:
        assert keys <= set(c)
        assert c["p"] in ("1.5", "inf") and c["delta"] == pytest.approx(1 / c["T"])
        assert math.isfinite(c["mean"]) and c["sd"] >= 0 and len(c["subopt_runs"]) == 3
        if c["algorithm"] == "Algorithm 1":
            assert c["scale"] is None
        else:
            assert c["scale"] in data["config"]["scale_grid"]
            assert c["scale_chosen_on"] == "validation set"
    assert {c["algorithm"] for c in cells if c["p"] == "inf"} == {"Algorithm 1", "NoisySGD"}
    assert data["config"]["y_bound"] == pytest.approx(1.25) and data["config"]["clip"] is True


def test_a_rerun_reuses_the_stored_cells_and_fresh_recomputes(tmp_path, capsys, monkeypatch):
    args = ["reproduce", "han2024", "--quick", "--json", "--out", str(tmp_path)]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["reused_cells"] == 0
    stored = sorted((tmp_path / "checkpoints").glob("han2024-*.cell.npz"))
    assert len(stored) == len(first["cells"])  # no pickles: the runner's store

    calls = []
    original = han2024.run_task
    monkeypatch.setattr(han2024, "run_task", lambda task: calls.append(task) or original(task))
    assert main(args) == 0
    again = json.loads(capsys.readouterr().out)
    assert calls == [] and again["reused_cells"] == len(first["cells"])
    for a, b in zip(first["cells"], again["cells"], strict=True):
        assert a["subopt_runs"] == b["subopt_runs"] and a["proven_epsilon"] == b["proven_epsilon"]
    assert main([*args, "--fresh"]) == 0
    fresh = json.loads(capsys.readouterr().out)
    assert fresh["reused_cells"] == 0 and len(calls) == len(first["cells"])
    assert [c["subopt_runs"] for c in fresh["cells"]] == [c["subopt_runs"] for c in first["cells"]]
