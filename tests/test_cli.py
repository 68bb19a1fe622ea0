"""The `dponline` command: help, version, JSON outputs, and errors."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from dponline import __version__
from dponline.cli import main
from dponline.continual.anytime_factorization import make_anytime_counter
from dponline.continual.factory import make_counter
from dponline.continual.registry import MECHANISMS
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget


def test_help_lists_commands(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    for cmd in ("demo", "run", "list", "counting", "mechanisms", "calibrate", "audit"):
        assert cmd in out


def test_version():
    proc = subprocess.run(
        [sys.executable, "-m", "dponline", "--version"], capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip() == f"dponline {__version__}"


def test_mechanisms_json_meets_the_issue_ratios(capsys):
    assert main(["mechanisms", "--T", "1024", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {r["mechanism"]: r for r in data["mechanisms"]}
    assert set(rows) == set(MECHANISMS)
    # issue 25: a factorisation at <= 9.6 (the rescaled square root; the square root: 10.71)
    assert rows["scaled_sqrt"]["max_variance"] <= 9.6
    pure = {r["mechanism"]: r for r in data["laplace"]}
    assert pure["kary_tree"]["max_variance_vs_honaker"] <= 0.5  # measured 0.231
    tree = rows["binary_tree"]["max_variance"]
    assert tree == pytest.approx(110.0)  # ceil(log2 1025) * floor(log2 1025) at rho = 1/2
    assert rows["honaker"]["max_variance"] <= 0.6 * tree
    assert rows["sqrt_factorization"]["max_variance"] <= 0.1 * tree
    # BLT with 4 buffers: within 1.1x of the square root's largest variance
    assert rows["blt"]["max_variance"] <= 1.1 * rows["sqrt_factorization"]["max_variance"]


def test_mechanisms_text(capsys):
    assert main(["mechanisms", "--T", "64"]) == 0
    assert "honaker" in capsys.readouterr().out


def test_calibrate_json(capsys):
    # T = 1024 keeps the property; T = 1e4 spends 16 s fitting a BLT
    assert main(["calibrate", "--T", "1024", "--d", "10", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    tight = next(
        r
        for r in rows
        if r["mechanism"] == "binary_tree"
        and r["noise"] == "gaussian"
        and r["calibration"] == "tight"
    )
    paper = next(
        r
        for r in rows
        if r["mechanism"] == "binary_tree"
        and r["noise"] == "gaussian"
        and r["calibration"] == "paper"
    )
    assert tight["per_draw_std"] <= paper["per_draw_std"] / 5


def test_bad_arguments_exit_with_message(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["mechanisms", "--T", "0"])
    assert exc.value.code == 2
    assert "positive integer" in capsys.readouterr().err
    assert main(["calibrate", "--low", "1", "--high", "0"]) == 2
    assert "low <= high" in capsys.readouterr().err


def test_counting_writes_outputs(tmp_path, capsys):
    assert main(["counting", "--out", str(tmp_path), "--seeds", "2", "--epsilons", "1"]) == 0
    out = capsys.readouterr().out
    assert "sqrt_factorization" in out
    data = json.loads((tmp_path / "counting.json").read_text())
    assert data["horizon"] == 5651 and data["dim"] == 36
    rows = data["rows"]
    # every mechanism with each noise it offers (Gaussian, Laplace) at tight, and the two
    # paper trees with both noises at paper
    tight = sum(len({"gaussian", "laplace"} & c.supported_noise) for c in MECHANISMS.values())
    assert len(rows) == tight + 4
    for r in rows:
        # measured error agrees with the exact variances (2 seeds x 36 coords x 2826 steps)
        assert r["rmse_running_mean"] == pytest.approx(r["rmse_predicted"], rel=0.25)
    assert (tmp_path / "counting.csv").exists()


def test_audit_command_json(capsys):
    assert main(["audit", "--T", "4", "--trials", "1000", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = data["rows"]
    assert {r["mechanism"] for r in rows} == set(MECHANISMS)
    assert sorted({r["noise_fraction"] for r in rows}) == [0.1, 0.5, 1.0]
    # correctly calibrated rows are never refuted (each claim: chance <= 1e-3)
    full = [r for r in rows if r["noise_fraction"] == 1.0]
    assert not any(r["refuted"] or r["rho_refuted"] for r in full)
    # a Gaussian counter's rho is tested, a Laplace one states none
    assert all((r["claimed_rho"] is not None) == (r["noise"] == "gaussian") for r in rows)
    assert all(r["rho_lower"] >= 0 for r in rows if r["noise"] == "gaussian")
    # the table's chance of refuting a true claim anywhere: a union bound over its tests at
    # the full noise (an epsilon each, a rho where stated)
    audits = [*full, *data["learners"]]
    tests = len(audits) + sum(r["claimed_rho"] is not None for r in audits)
    assert data["familywise_bound"] == pytest.approx(min(1.0, tests * 1e-3))
    # every registered private learner, each of its test cases, claimed beside audited epsilon
    # at full noise and at a tenth of it
    from dponline.registry import learners

    cases = [(n, c) for n, e in learners().items() if e.private for c in e.test_cases]
    expected = [(n, c.label) for n, c in cases]
    assert [(r["learner"], r["case"]) for r in data["learners"]] == expected
    for r, (_, case) in zip(data["learners"], cases, strict=True):
        # tight: as the case asks (the RDP-accounted baselines aim 1e-4 below the request, by
        # design)
        assert r["claimed_epsilon"] == pytest.approx(case.epsilon, abs=2e-4)
        assert r["claimed_epsilon"] <= case.epsilon + 1e-9  # never more than asked
        assert r["trials"] == 1000
        assert r["epsilon_lower"] >= 0 and r["epsilon_lower_under_noised"] >= 0
        assert not r["refuted"]  # each: chance <= 1e-3
        if r["claimed_rho"] is None:
            assert r["rho_lower"] is None and r["rho_lower_under_noised"] is None
        else:
            assert r["rho_lower"] >= 0 and r["rho_lower_under_noised"] >= 0
            assert not r["rho_refuted"]  # each: chance <= 1e-3
    assert any(r["claimed_rho"] is not None for r in data["learners"])


def test_audit_named_learners_at_a_chosen_noise_fraction(capsys):
    """``--learners`` without ``--one-run`` audits only those learners (no counter);
    ``--noise-fraction`` sets the second row's noise; each row says what was tested."""
    args = ["audit", "--learners", "dp-ucb", "--trials", "400", "--noise-fraction", "0.5"]
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["rows"] == [] and data["T"] is None
    from dponline.registry import learners

    cases = learners()["dp-ucb"].test_cases
    assert [r["case"] for r in data["learners"]] == [c.label for c in cases]
    for row, case in zip(data["learners"], cases, strict=True):
        assert row["under_noise_fraction"] == 0.5
        assert (row["horizon"], row["changed_round"]) == (
            case.audit.horizon,
            case.audit.changed_round,
        )
        assert row["values"] == list(case.audit.values)
        assert row["counts"][1] == row["counts"][3] == 400 and "statistic" in row["event"]
    # an epsilon and a rho test per case: dp-ucb's Gaussian case states a rho
    with_rho = sum(row["claimed_rho"] is not None for row in data["learners"])
    assert with_rho == 1
    assert data["familywise_bound"] == pytest.approx((len(cases) + with_rho) * 1e-3)
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Continual-counting" not in out and "(0.5 of it)" in out and "changed" in out
    for misuse, said in (
        (["--noise-fraction", "1.5"], "noise_fraction must lie in (0, 1)"),
        (["--one-run", "--noise-fraction", "0.5"], "without --one-run"),
        (["--T", "8"], "no counter is audited"),
    ):
        assert main(["audit", "--learners", "dp-ucb", *misuse]) == 2
        assert said in capsys.readouterr().err


def test_audit_command_text_lists_learners(capsys):
    assert main(["audit", "--T", "2", "--trials", "200"]) == 0
    out = capsys.readouterr().out
    assert "eps lower (noise x1)" in out and "noise x" in out
    assert "ctrl-glm" in out
    assert "dp-glm-bandit" in out and "dp-frank-wolfe" in out
    assert "some true claim is refuted with chance at most" in out
    assert "rho-zCDP claims" in out and "rho lower (noise x1)" in out and "claimed rho" in out
    assert "'not refuted' certifies nothing" in out  # a factor-2 violation may pass


@pytest.mark.parametrize(
    ("environment", "learner", "expected"),
    [
        (
            "{ n_experts = 3 }",
            '{ noize = "laplace" }',
            "spec field 'learners[0].options': learner 'dp-ftrl' has no option 'noize' "
            "(did you mean 'noise'?); its options: "
            "anytime, clip, delta, design_horizon, eta, eta_constant, mechanism, min_separation, "
            "noise, participations, regulariser",
        ),
        (
            "{ n_expert = 3 }",
            "{}",
            "spec field 'environments[0].options': environment 'stochastic' has no option "
            "'n_expert' (did you mean 'n_experts'?); "
            "its options: n_experts, gap",
        ),
    ],
)
def test_option_typos_are_one_line_with_a_suggestion(
    tmp_path, capsys, environment, learner, expected
):
    """Found when the spec is read, before any task runs (a typo in the last learner's options
    used to stop the run after every other task had run), and the run leaves nothing behind."""
    spec = tmp_path / "typo.toml"
    spec.write_text(
        'name = "typo"\nhorizon = 20\nseeds = 2\nepsilons = [1.0]\n'
        f'[[environments]]\nname = "stochastic"\noptions = {environment}\n'
        f'[[learners]]\nname = "dp-ftrl"\noptions = {learner}\n'
    )
    code = main(["run", str(spec), "--out", str(tmp_path / "out"), "--backend", "serial"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [f"dponline run: error: {expected}"]
    assert not (tmp_path / "out").exists()


def test_every_option_has_help_that_shows_its_default():
    import argparse

    from dponline.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            where = f"dponline {name} {'/'.join(action.option_strings) or action.dest}"
            assert action.help, f"{where} has no help text"
            has_default = action.default not in (None, False) and action.option_strings
            if has_default:
                assert "default" in action.help, f"{where} does not show its default"


def test_calibrate_at_delta_zero_gives_the_pure_dp_rows(capsys):
    """--delta 0 asks for pure DP: the Laplace rows only (it was refused as not positive)."""
    assert main(["calibrate", "--T", "256", "--d", "3", "--delta", "0", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows and {r["noise"] for r in rows} == {"laplace"}
    assert all(r["delta"] == 0 for r in rows)
    for bad in ("1", "-0.1", "x"):
        with pytest.raises(SystemExit):
            main(["calibrate", "--delta", bad])
    assert "expected a number in [0, 1)" in capsys.readouterr().err


def test_calibrate_warns_where_a_paper_formula_proves_less_than_asked(capsys):
    # T = 1024, not 1e4: the same warning (1.1 there, 1.054 at T = 1e4) without fitting a BLT
    # for T = 1e4 (18 s of the suite)
    assert main(["calibrate", "--T", "1024", "--d", "10"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    # the Laplace tree of Agarwal & Singh's Theorem 3.1 proves 1.1 > 1 (both tree layouts)
    assert len(err) == 2 and all(line.startswith("warning: ") for line in err)
    assert "binary_tree laplace [paper] proves epsilon 1.1," in err[0]
    assert "padded_tree laplace [paper] proves epsilon 1.1," in err[1]


def test_the_docs_guarantee_page_is_the_registry_s(capsys):
    from pathlib import Path

    assert main(["list", "--markdown"]) == 0
    page = Path(__file__).resolve().parents[1] / "docs" / "guarantees.md"
    assert page.read_text() == capsys.readouterr().out, (
        "docs/guarantees.md is stale: dponline list --markdown > docs/guarantees.md"
    )


def test_each_command_writes_to_its_own_default_folder():
    from dponline.cli import build_parser

    parser = build_parser()
    outs = {
        cmd: parser.parse_args([cmd, *extra]).out
        for cmd, extra in (
            ("demo", []),
            ("counting", []),
            ("side-by-side", []),
            ("reproduce", ["han2024"]),
        )
    }
    assert len(set(outs.values())) == len(outs), outs
    # the demo's report sits at the top; no other command writes its files there
    assert all(o.startswith("dponline-report/") for c, o in outs.items() if c != "demo")


def test_an_unknown_learner_is_one_line_with_a_suggestion(tmp_path, capsys):
    spec = tmp_path / "typo.toml"
    spec.write_text(
        'name = "typo"\nhorizon = 20\nepsilons = [1.0]\n'
        '[[environments]]\nname = "stochastic"\n[[learners]]\nname = "dp-ftlr"\n'
    )
    assert main(["run", str(spec), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown 'dp-ftlr' (did you mean 'dp-ftrl'?)" in err[0]


def test_a_warning_is_one_line_naming_the_command(tmp_path, capsys):
    # it named the installed script's line (".../bin/dponline:8: UserWarning: ...") and printed
    # that line's code after it
    spec = tmp_path / "advice.toml"
    spec.write_text(
        'name = "advice"\nhorizon = 40\nepsilons = [1.0]\nseeds = 1\n'
        '[[environments]]\nname = "bernoulli_bandit"\n[[learners]]\nname = "private-exp4"\n'
    )
    assert main(["run", str(spec), "--out", str(tmp_path / "out"), "--no-checkpoint"]) == 0
    err = capsys.readouterr().err.splitlines()
    said = [line for line in err if "experts' advice" in line]
    assert len(said) == 1 and said[0].startswith("dponline run: warning: the environment")
    assert not any("UserWarning" in line or "sys.exit" in line for line in err)
    # under python -W error the warning is an exception: one line and status 2, no traceback
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code = main(["run", str(spec), "--out", str(tmp_path / "out"), "--no-checkpoint"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("dponline run: error (UserWarning raised by -W")


def test_the_warning_line_goes_to_the_file_python_passes_it():
    # the standard library passes the file positionally; the line went to stderr instead
    import io

    from dponline.cli import _warning_line

    buffer = io.StringIO()
    _warning_line("run")("careful", UserWarning, "x.py", 1, buffer)
    assert buffer.getvalue() == "dponline run: warning: careful\n"


def test_audit_one_run_json_subset(capsys):
    assert (
        main(["audit", "--one-run", "--json", "--learners", "dp-ftrl-oco", "--canaries", "150"])
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    (row,) = data["learners"]
    assert row["learner"] == "dp-ftrl-oco" and row["canaries"] == 150
    for key in ("claimed_epsilon", "lower_bound_at_claim", "lower_bound_at_tenth", "horizon"):
        assert key in row
    assert row["refuted_at_claim"] is False  # chance <= 1e-3
    assert row["guesser"] == "fitted discriminant"
    assert data["wall_seconds"] > 0 and data["significance"] == 1e-3
    assert data["familywise_bound"] == pytest.approx(1e-3)  # one audit at the claim
    assert data["learners_audited"] == ["dp-ftrl-oco"]
    assert data["learners_refuted_at_claim"] == []
    assert data["learners_refuted_at_tenth"] == (["dp-ftrl-oco"] if row["refuted_at_tenth"] else [])


def test_audit_one_run_text_and_misuse(capsys):
    assert main(["audit", "--one-run", "--learners", "dp-ftrl-oco", "--canaries", "60"]) == 0
    out = capsys.readouterr().out
    assert "dp-ftrl-oco" in out and "lower (x0.1)" in out and "Wall time" in out
    head = next(line for line in out.splitlines() if line.startswith("learner "))
    assert "delta" in head.split()  # the claim audited (some learners are rebuilt at 1e-6)
    assert "Refuted at the claim: 0 of 1 learners." in out
    assert "over the 1 audit at the full noise" in out
    assert main(["audit", "--canaries", "60"]) == 2
    assert "--one-run" in capsys.readouterr().err
    for ignored in (["--T", "100"], ["--trials", "100"]):  # options of the many-run audit
        assert main(["audit", "--one-run", *ignored, "--learners", "dp-ftrl-oco"]) == 2
        assert "without --one-run" in capsys.readouterr().err
    assert main(["audit", "--one-run", "--learners", "ucb1"]) == 2  # crashed printing no rows
    err = capsys.readouterr().err
    assert "['ucb1'] is not private" in err and "dp-imed" in err


def test_mechanisms_for_a_person(capsys):
    """``--participations k --min-separation b``: each Gaussian mechanism's largest variance
    with the unit of privacy one person; never below its one-round variance."""
    args = ["mechanisms", "--T", "64", "--participations", "4", "--min-separation", "8"]
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["participations"] == 4 and data["min_separation"] == 8
    for r in data["mechanisms"]:
        assert r["participation_max_variance"] >= r["single_max_variance"] * (1 - 1e-12)
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "one person with at" in out


def test_mechanisms_for_a_person_show_the_laplace_counters(capsys):
    """The person's table had Gaussian noise only (and refused --epsilon), though ``tight``
    ranks the Laplace counters for a person too (DP-UCB's default noise): both tables now,
    the Laplace one at --epsilon with each l1 factor and whether it is exact."""
    args = ["mechanisms", "--T", "64", "--participations", "4", "--min-separation", "8"]
    assert main([*args, "--epsilon", "0.5", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["epsilon"] == 0.5
    names = {r["mechanism"] for r in data["laplace"]}
    assert {"kary_tree", "honaker", "binary_tree"} <= names and "blt" not in names
    for r in data["laplace"]:
        assert r["participation_max_variance"] >= r["single_max_variance"] * (1 - 1e-12)
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Pure DP: Laplace noise at epsilon = 1" in out and "l1 factor" in out


@pytest.mark.slow
def test_mechanisms_anytime_json_meets_the_issue_ratio(capsys):
    """Issue 25: the best anytime mechanism within 1.5x of a square root built for t, at every
    t = 2^10, 2^12, ..., 2^20 (about 8 s: Jacobsen & Fawaz's coefficients to 2^20)."""
    assert main(["mechanisms", "--anytime", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    best = min(data["mechanisms"], key=lambda r: r["worst_ratio"])
    ratios = best["ratio_to_fixed_horizon_sqrt"]
    assert sorted(int(t) for t in ratios) == [2**e for e in range(10, 21, 2)]
    assert max(ratios.values()) <= 1.5


def test_mechanisms_anytime_for_a_person(capsys):
    """The anytime table for one person: its ratio at t = 2^10 is the one of the counters a
    learner builds (the tapered factorisation without a horizon, the square root with one,
    both calibrated for the person at the same (epsilon, delta)), and calibrating for the
    person beats group privacy at every t. About 4 s."""
    assert main(["mechanisms", "--anytime", "--participations", "4", "--min-separation", "256",
                 "--json"]) == 0  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    person, group, blt = data["mechanisms"]
    assert "for the person" in person["mechanism"] and "group privacy" in group["mechanism"]
    for t, ratio in person["ratio_to_fixed_horizon_sqrt"].items():
        assert ratio < group["ratio_to_fixed_horizon_sqrt"][t]
        assert blt["ratio_to_fixed_horizon_sqrt"][t] < group["ratio_to_fixed_horizon_sqrt"][t]
    # the BLT without a horizon, as a learner past the memory budget builds it
    wide = make_counter(
        "anytime_blt",
        horizon=None,
        bounds=Box(0.0, 1.0, dim=1),
        budget=PrivacyBudget(1.0, 1e-6, participations=4, min_separation=256),
    )
    root = make_counter(
        "sqrt_factorization",
        horizon=4096,
        bounds=Box(0.0, 1.0, dim=1),
        budget=PrivacyBudget(1.0, 1e-6, participations=4, min_separation=256),
    )
    expected = wide.variances(4096).max() / root.release_variances(4096, root.noise, 1).max()
    assert blt["ratio_to_fixed_horizon_sqrt"]["4096"] == pytest.approx(expected, rel=1e-9)
    budget = PrivacyBudget(1.0, 1e-6, participations=4, min_separation=256)
    bounds = Box(0.0, 1.0, dim=1)
    tapered = make_anytime_counter(bounds, budget)
    fixed = make_counter("sqrt_factorization", horizon=1024, bounds=bounds, budget=budget)
    expected = tapered.variances(1024).max() / fixed.release_variances(1024, fixed.noise, 1).max()
    assert person["ratio_to_fixed_horizon_sqrt"]["1024"] == pytest.approx(expected, rel=1e-9)
    # tight without a horizon takes the one whose worst ratio is smaller: here the BLT
    assert blt["worst_ratio"] < person["worst_ratio"]
    default = make_counter(None, horizon=None, bounds=bounds, budget=budget)
    assert default.name == "anytime_blt"
    assert (
        main(["mechanisms", "--anytime", "--participations", "4", "--min-separation", "256"]) == 0
    )
    assert "group privacy" in capsys.readouterr().out


def test_mechanisms_refuses_options_its_table_would_ignore(capsys):
    for args, says in [
        (["--anytime", "--min-separation", "4"], "goes with --participations"),
        (["--anytime", "--T", "64"], "--anytime"),
        (["--anytime", "--epsilon", "2"], "--anytime"),
        (["--min-separation", "5"], "goes with --participations"),
        (["--T", "1024", "--participations", "4", "--min-separation", "2000"], "at most 1 do"),
    ]:
        assert main(["mechanisms", *args]) == 2, args
        assert says in capsys.readouterr().err, args


def test_list_takes_one_output_form_and_stops_quietly_when_its_reader_does(capsys):
    with pytest.raises(SystemExit):
        main(["list", "--json", "--markdown"])
    assert "not allowed with" in capsys.readouterr().err
    script = "import sys; from dponline.cli import main; sys.exit(main(['list', '--json']))"
    proc = subprocess.run(  # `true` reads nothing: the pipe is closed before list writes
        f'{sys.executable} -c "{script}" | true',
        shell=True,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.stderr == ""


def test_a_broken_pipe_that_is_not_stdout_s_is_an_error(monkeypatch):
    import os

    import dponline.cli as cli

    def unrelated_pipe_breaks(args):
        read, write = os.pipe()
        os.close(read)
        try:
            os.write(write, b"x")  # a pipe of the command's own (a worker's) breaks
        finally:
            os.close(write)
        return 0

    monkeypatch.setattr(cli, "_cmd_list", unrelated_pipe_breaks)
    with pytest.raises(BrokenPipeError):
        main(["list"])


def test_run_at_a_new_horizon_runs_environments_it_makes_the_same_once(tmp_path, capsys):
    """--horizon on a spec with one environment at two horizons (han2024's T = 1000 and
    T = 2000 of one p and d) ran the same data twice under two labels: it now runs it once and
    says so, in the text and the JSON."""
    spec = tmp_path / "two.toml"
    spec.write_text(
        'name = "two horizons"\nseeds = 2\nepsilons = [1.0]\n'
        '[[environments]]\nname = "stochastic"\nlabel = "T=30"\nhorizon = 30\n'
        '[[environments]]\nname = "stochastic"\nlabel = "T=50"\nhorizon = 50\n'
        '[[learners]]\nname = "dp-ftrl"\n'
    )
    out = tmp_path / "out"
    args = ["run", str(spec), "--out", str(out), "--backend", "serial", "--no-checkpoint"]
    assert main([*args, "--horizon", "20", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["notes"] == [
        "at T = 20, environment 'T=50' is the same as 'T=30' and is run once, under that label"
    ]
    assert {row["environment"] for row in data["summary"]} == {"T=30 (run at T = 20)"}
    assert main([*args, "--horizon", "20"]) == 0
    assert "Note: at T = 20, environment 'T=50' is the same as 'T=30'" in capsys.readouterr().out
    assert main([*args, "--json"]) == 0  # at their own horizons both run, with no note
    data = json.loads(capsys.readouterr().out)
    assert "notes" not in data and {r["environment"] for r in data["summary"]} == {"T=30", "T=50"}


def test_learner_option_values_read_as_toml():
    from dponline.cli import _learner_option

    assert _learner_option("epsilon=0.5") == ("epsilon", 0.5)
    assert _learner_option("delta=1e-6") == ("delta", 1e-6)
    assert _learner_option("participations=4") == ("participations", 4)
    assert _learner_option("clip=true") == ("clip", True)
    # Python's spelling: was the string 'True', refused as "must be True or False, got 'True'"
    assert _learner_option("anytime=True") == ("anytime", True)
    assert _learner_option("clip=FALSE") == ("clip", False)
    assert _learner_option("horizon=None") == ("horizon", None)
    assert _learner_option('noise="gaussian"') == ("noise", "gaussian")
    assert _learner_option("noise=gaussian") == ("noise", "gaussian")
    for bad in ("epsilon", "=1", "epsilon=", "2x=1"):
        with pytest.raises(argparse.ArgumentTypeError, match="KEY=VALUE"):
            _learner_option(bad)


@pytest.mark.filterwarnings("ignore:DPIMED. the first phases:UserWarning")
def test_audit_a_configuration_of_ones_own(capsys):
    """``--option``: the named learners built with these options over their audit cases', in
    both audits; a person's claim goes to the one-run audit, whose canaries are a person's
    rounds (the many-run audit changes one round and refuses it)."""
    args = ["audit", "--one-run", "--json", "--learners", "dp-imed", "--canaries", "150"]
    assert main([*args, "--option", "epsilon=0.5"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["learners"]
    assert row["claimed_epsilon"] == 0.5 and row["options"] == "epsilon=0.5"
    assert row["participations"] == 1 and row["refuted_at_claim"] is False  # chance <= 1e-3
    # the options given in one --option or in several: all of them (a second --option
    # replaced the first, so min_separation came without participations and was refused)
    assert main([*args, "--option", "participations=3", "--option", "min_separation=5"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["learners"]
    # DP-IMED proves one round; group privacy covers any 3 rounds (separation 1, not 5)
    assert (row["participations"], row["min_separation"], row["claimed_epsilon"]) == (3, 1, 1)
    assert row["guesser"] == "white box"  # the arm-order guesser sums a person's rounds
    assert row["refuted_at_claim"] is False  # chance <= 1e-3
    many = ["audit", "--json", "--learners", "dp-imed", "--trials", "400"]
    assert main([*many, "--option", "epsilon=0.5"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["learners"]
    assert row["claimed_epsilon"] == 0.5 and row["options"] == "epsilon=0.5"
    assert main([*many, "--option", "participations=3"]) == 2
    assert "a person's 3 rounds" in capsys.readouterr().err
    for wrong, says in (
        (["audit", "--option", "epsilon=0.5"], "name them with --learners"),
        ([*many, "--option", "epsilon=0.5", "epsilon=0.2"], "given twice for epsilon"),
        ([*many, "--option", "epsilon=0.5", "--option", "epsilon=0.2"], "given twice for"),
        ([*many, "--option", "calibration=paper"], "--calibration"),
        ([*many, "--option", "epsilonn=0.5"], "did you mean 'epsilon'"),
        ([*many, "--option", "epsilon=none"], "epsilon must be a number > 0, got None"),
    ):
        assert main(wrong) == 2
        assert says in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse's own usage error
        main([*many, "--option", "epsilon"])
    assert "KEY=VALUE" in capsys.readouterr().err


def test_configured_case_puts_the_options_last_and_keeps_the_label():
    from dponline.experiments.learner_audit import configured_case
    from dponline.registry import AuditCase, LearnerTestCase

    case = LearnerTestCase(
        "stochastic",
        learner_options={"eta": 1.0},
        audit=AuditCase(4, learner_options={"eta": 2.0}, one_run_options={"eta": 3.0}),
        label="small",
    )
    got = configured_case(case, {"eta": 5.0, "epsilon": 0.25})
    # the label finds the case's one-run plan and white box: renamed, they were lost (the DP-UCB
    # cases ran at gap 2 instead of 8, the fitted guesser instead of the white box)
    assert got.epsilon == 0.25 and got.label == "small"
    assert got.audit.learner_options == {"eta": 5.0}
    assert got.audit.one_run_options == {"eta": 5.0}
    assert case.audit.one_run_options == {"eta": 3.0}  # the registry's case is unchanged
    with pytest.raises(ValueError, match="calibration="):
        configured_case(case, {"calibration": "paper"})


def test_list_names_and_environments(capsys):
    assert main(["list", "dp-imed", "dp-ucb"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("dp-imed  [") and "\ndp-ucb  [" in out and "ucb1  [" not in out
    assert "person:       a person's k rounds by group privacy" in out  # dp-imed
    assert "person:       proves a person's k rounds >= b apart itself" in out  # dp-ucb
    # what the guarantees leave out (floating point) is said once, under the private ones
    assert out.count("proven in exact arithmetic") == 1
    assert main(["list", "ucb1"]) == 0 and "exact arithmetic" not in capsys.readouterr().out
    assert main(["list", "dp-imd"]) == 2
    assert "did you mean 'dp-imed'" in capsys.readouterr().err
    assert main(["environments", "k_armed"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("k_armed  [bandit") and "family='bernoulli'" in out and "dp-imed" in out
    assert main(["environments", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["environments"]
    by_name = {r["name"]: r for r in rows}
    assert by_name["stocks"]["options"] == {"dataset": "nyse_o", "scale": 0.1}
    assert "dp-ftrl" in by_name["stocks"]["learners"]
    assert main(["environments", "k_armd"]) == 2
    assert "did you mean 'k_armed'" in capsys.readouterr().err


def test_horizon_is_spelt_as_in_dponline_run_too(capsys):
    """``--horizon`` (dponline run's name) is an alias of ``--T`` in every command that takes
    one."""
    assert main(["mechanisms", "--T", "64", "--json"]) == 0
    by_t = json.loads(capsys.readouterr().out)
    assert main(["mechanisms", "--horizon", "64", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == by_t
    for command in ("audit", "calibrate", "side-by-side"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "--T T, --horizon T" in capsys.readouterr().out
