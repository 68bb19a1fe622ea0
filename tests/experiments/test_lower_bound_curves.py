"""The regret lower bounds beside a spec's Bernoulli bandits
(dponline.experiments.lower_bound_curves), in `dponline run`'s report as in the demo's."""

from __future__ import annotations

import numpy as np
import pytest

from dponline.bandits.lower_bounds import lai_robbins_coefficient, regret_lower_bound_curve
from dponline.environments.k_armed import two_level_means
from dponline.experiments.lower_bound_curves import lower_bound_references, uniform_play_regret
from dponline.experiments.spec import parse_spec


def _spec(environments):  # type: ignore[no-untyped-def]
    return parse_spec(
        {
            "horizon": 20000,
            "epsilons": [0.5, 1.0],
            "environments": environments,
            "learners": [{"name": "dp-imed"}],
        }
    )


def test_bernoulli_arms_get_lai_robbins_and_the_private_bound_at_each_epsilon():
    refs = lower_bound_references(_spec([{"name": "k_armed", "label": "two"}]))
    (curves,) = refs.values()
    assert list(refs) == ["two"]
    assert [(c["label"], c["epsilon"]) for c in curves] == [
        ("Lai-Robbins bound", None),
        ("private bound (its epsilon)", 0.5),
        ("private bound (its epsilon)", 1.0),
    ]
    means = two_level_means(10)
    t = np.asarray(curves[0]["t"])
    bound = lai_robbins_coefficient(means) * np.log(t)
    np.testing.assert_allclose(curves[0]["regret"], bound)
    assert t[-1] == 20000 and np.all(bound <= 0.09 * t)  # below uniform play's regret ...
    assert 1500 < t[0] < 2000  # ... from where it crosses it (20.4 log t = 0.09 t near 1,720)
    t_private = np.asarray(curves[1]["t"])
    np.testing.assert_allclose(curves[1]["regret"], regret_lower_bound_curve(means, 0.5, t_private))


def test_no_curve_where_the_bound_is_above_uniform_play_throughout():
    """The Open Bandit Dataset's 80 items at their click rates over the demo's 10,000 rounds:
    Lai-Robbins' C log t is 1,145.6 at the end, where playing at random loses 225.3, and above
    it throughout: drawn, the curves squashed the runs to the panels' floor; none now."""
    spec = _spec([{"name": "open_bandit_arms", "label": "items", "horizon": 10000}])
    assert lower_bound_references(spec) == {}
    assert uniform_play_regret(spec)["items"] == pytest.approx(225.34, abs=0.01)


def test_other_laws_and_other_environments_get_none():
    """The bounds use the Bernoulli divergence: for Beta arms of the same means it is not a
    lower bound, so nothing is drawn there (nor beside experts)."""
    spec = _spec(
        [
            {"name": "k_armed", "label": "beta", "options": {"family": "beta"}},
            {"name": "k_armed", "label": "bernoulli", "options": {"instance": "unequal_gaps"}},
        ]
    )
    assert list(lower_bound_references(spec)) == ["bernoulli"]
    experts = parse_spec(
        {"environments": [{"name": "stochastic"}], "learners": [{"name": "ftrl"}], "horizon": 50}
    )
    assert lower_bound_references(experts) == {} == uniform_play_regret(experts)


def test_they_are_keyed_as_the_results_name_the_environments():
    """Unlabelled environments are named by the runner with their options ("k_armed arms=3"):
    the curves were keyed "k_armed", so none was drawn, and two such environments overwrote
    each other. The uniform level is T (max mean - mean of the means), any family."""
    spec = _spec(
        [
            {"name": "k_armed", "options": {"arms": 3}},
            {"name": "k_armed", "options": {"arms": 5, "family": "beta"}},
        ]
    )
    assert list(lower_bound_references(spec)) == ["k_armed arms=3"]
    assert uniform_play_regret(spec) == pytest.approx(
        {"k_armed arms=3": 20000 * (0.9 - 2.5 / 3), "k_armed arms=5 family=beta": 20000 * 0.08}
    )


def test_dponline_run_draws_them(tmp_path, monkeypatch):
    """The README says the lower bounds are drawn in the report; only `dponline demo` drew
    them, a spec run by `dponline run` did not."""
    import dponline.experiments.report as report
    from dponline.cli import main

    seen = {}
    real = report.write_report

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.update(kwargs.get("references") or {})
        return real(*args, **kwargs)

    monkeypatch.setattr(report, "write_report", spy)
    spec = tmp_path / "bandit.toml"
    spec.write_text(
        'name = "bandit"\nseeds = 2\nepsilons = [1.0]\nhorizon = 3000\n'
        '[[environments]]\nname = "k_armed"\n[[learners]]\nname = "dp-imed"\n'
    )
    args = ["run", str(spec), "--out", str(tmp_path / "out"), "--backend", "serial"]
    assert main([*args, "--no-checkpoint", "--json"]) == 0
    assert [c["label"] for c in seen["k_armed"]] == [
        "Lai-Robbins bound",
        "private bound (its epsilon)",
    ]
    assert pytest.approx(seen["k_armed"][0]["regret"][-1]) == lai_robbins_coefficient(
        two_level_means(10)
    ) * np.log(3000)
