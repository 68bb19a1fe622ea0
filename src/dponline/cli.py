"""The ``dponline`` command.

    dponline demo          the main job: every learner on real data, table + HTML report
    dponline run SPEC      an experiment from a TOML spec (resumable)
    dponline list [NAME]   every learner (or those named) with its paper, setting and guarantee
    dponline environments  every environment with its options and the learners that run in it
    dponline counting      private running means of real stock returns, every mechanism
    dponline mechanisms    continual-counting mechanisms with their max and mean variance
    dponline calibrate     noise of every mechanism and calibration for a privacy budget
    dponline audit         empirical privacy audit of every counting mechanism and private learner
                           (--one-run: every private learner audited in one run with canaries)
    dponline reproduce     regenerate a paper's experiment (han2024: Han et al. Tables 2-4)
    dponline side-by-side  CTRL, DP-FTRL and streaming Frank-Wolfe on one stream, one budget

Each command takes ``--json`` for machine-readable output.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dponline import __version__

__all__ = ["build_parser", "main"]


def _positive_int(text: str) -> int:
    try:
        value = int(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1 or value != float(text):
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _horizon_argument(parser: argparse.ArgumentParser, default: int | None, help: str) -> None:
    """``--T`` (alias ``--horizon``, as ``dponline run`` spells it): a command's horizon."""
    parser.add_argument(
        "--T", "--horizon", dest="T", type=_positive_int, default=default, help=help
    )


def _learner_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` of ``--option``: the value read as a TOML value (``0.5``, ``true``,
    ``"gaussian"``), ``none`` as None, ``True`` / ``False`` in any case as booleans (Python's
    spelling was read as the string 'True'), anything else as the string it is."""
    import tomllib

    key, sep, raw = text.partition("=")
    key, raw = key.strip(), raw.strip()
    if not sep or not key.isidentifier() or not raw:
        raise argparse.ArgumentTypeError(
            f"expected KEY=VALUE (e.g. epsilon=0.5, participations=4), got {text!r}"
        )
    if raw.lower() in ("none", "null"):
        return key, None
    if raw.lower() in ("true", "false"):
        return key, raw.lower() == "true"
    try:
        return key, tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return key, raw


def _delta(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _print_table(rows: list[dict[str, Any]], columns: list[tuple[str, str, str]]) -> None:
    """columns: (key, header, format); a ``None`` cell is left blank."""
    cells = [
        [
            ""
            if r[k] is None
            else format(r[k], f)
            if f and not isinstance(r[k], str)
            else str(r[k])
            for k, _, f in columns
        ]
        for r in rows
    ]
    headers = [h for _, h, _ in columns]
    widths = [max([len(h), *(len(c[i]) for c in cells)]) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for c in cells:
        print("  ".join(v.ljust(w) for v, w in zip(c, widths, strict=True)))


def _cmd_mechanisms(args: argparse.Namespace) -> int:
    from dponline.experiments.mechanism_table import laplace_table, mechanism_table

    person = args.participations > 1 or args.min_separation > 1
    if args.anytime and (args.T is not None or args.epsilon is not None):
        raise ValueError(
            "--anytime compares counters without a horizon at --rho: it takes no --T or --epsilon"
        )
    if person and args.participations == 1:
        raise ValueError("--min-separation goes with --participations (2 or more)")
    if args.anytime:
        return _anytime_person(args) if person else _anytime_mechanisms(args)
    args.T = 1024 if args.T is None else args.T
    if person:
        k, b = args.participations, args.min_separation
        if k == 1:
            raise ValueError("--min-separation goes with --participations (2 or more)")
        if (k - 1) * b >= args.T:
            raise ValueError(
                f"{k} rounds at least {b} apart do not fit in T = {args.T} rounds: at most "
                f"{(args.T - 1) // b + 1} do"
            )
        return _person_mechanisms(args)
    args.epsilon = 1.0 if args.epsilon is None else args.epsilon
    rows = mechanism_table(args.T, rho=args.rho)
    pure = laplace_table(args.T, epsilon=args.epsilon)
    if args.json:
        print(
            json.dumps(
                {
                    "T": args.T,
                    "rho": args.rho,
                    "mechanisms": rows,
                    "epsilon": args.epsilon,
                    "laplace": pure,
                },
                indent=2,
            )
        )
        return 0
    print(f"Continual counting over T = {args.T} rounds, one round's value of l2 sensitivity 1,")
    print(f"Gaussian noise at the same budget rho = {args.rho:g} (zCDP) for every mechanism.")
    print("Variances are exact (per coordinate), not estimated.\n")
    _print_table(
        rows,
        [
            ("mechanism", "mechanism", ""),
            ("max_variance", "max variance", ".4g"),
            ("mean_variance", "mean variance", ".4g"),
            ("max_variance_vs_binary_tree", "max vs tree", ".3f"),
            ("description", "description", ""),
        ],
    )
    print(
        f"\nPure DP: Laplace noise at epsilon = {args.epsilon:g} for every mechanism that offers "
        "it, scaled to its l1 sensitivity.\n"
    )
    _print_table(
        pure,
        [
            ("mechanism", "mechanism", ""),
            ("max_variance", "max variance", ".4g"),
            ("mean_variance", "mean variance", ".4g"),
            ("max_variance_vs_honaker", "max vs Honaker", ".3f"),
            ("description", "description", ""),
        ],
    )
    return 0


def _person_mechanisms(args: argparse.Namespace) -> int:
    from dponline.experiments.participation_table import (
        participation_laplace_table,
        participation_table,
    )

    k, b = args.participations, args.min_separation
    args.epsilon = 1.0 if args.epsilon is None else args.epsilon
    rows = participation_table(args.T, k, b, rho=args.rho)
    pure = participation_laplace_table(args.T, k, b, epsilon=args.epsilon)
    if args.json:
        print(
            json.dumps(
                {
                    "T": args.T,
                    "rho": args.rho,
                    "participations": k,
                    "min_separation": b,
                    "mechanisms": rows,
                    "epsilon": args.epsilon,
                    "laplace": pure,
                },
                indent=2,
            )
        )
        return 0
    print(f"Continual counting over T = {args.T} rounds; the unit of privacy is one person with at")
    print(f"most {k} rounds, at least {b} apart. Gaussian noise at the same budget rho =")
    print(f"{args.rho:g} (zCDP), scaled to each mechanism's sensitivity for that person; exact")
    print("variances (a sensitivity marked 'bound' is a proven upper bound, not the exact one).\n")
    table = [{**r, "exact": "exact" if r["l2_exact"] else "bound"} for r in rows]
    _print_table(
        table,
        [
            ("mechanism", "mechanism", ""),
            ("participation_max_variance", "max variance (person)", ".4g"),
            ("single_max_variance", "max variance (round)", ".4g"),
            ("participation_l2_factor", "l2 factor", ".4g"),
            ("exact", "sensitivity", ""),
        ],
    )
    print(
        f"\nPure DP: Laplace noise at epsilon = {args.epsilon:g} for every mechanism that offers "
        "it, scaled to its l1\nsensitivity for that person.\n"
    )
    pure_table = [{**r, "exact": "exact" if r["l1_exact"] else "bound"} for r in pure]
    _print_table(
        pure_table,
        [
            ("mechanism", "mechanism", ""),
            ("participation_max_variance", "max variance (person)", ".4g"),
            ("single_max_variance", "max variance (round)", ".4g"),
            ("participation_l1_factor", "l1 factor", ".4g"),
            ("exact", "sensitivity", ""),
        ],
    )
    return 0


def _anytime_mechanisms(args: argparse.Namespace) -> int:
    from dponline.experiments.anytime_table import anytime_table

    rows = anytime_table(rho=args.rho)
    if args.json:
        print(json.dumps({"anytime": True, "rho": args.rho, "mechanisms": rows}, indent=2))
        return 0
    print("Counters without a horizon: the largest variance of the releases up to t, over that")
    print("of a square-root factorisation built for horizon t, at the same budget rho =")
    print(f"{args.rho:g} (zCDP). Exact variances, not estimated.\n")
    _print_ratio_table(rows)
    return 0


def _anytime_person(args: argparse.Namespace) -> int:
    from dponline.experiments.anytime_table import anytime_person_table

    k, b = args.participations, args.min_separation
    rows = anytime_person_table(k, b, rho=args.rho)
    if args.json:
        out = {"anytime": True, "rho": args.rho, "participations": k, "min_separation": b}
        print(json.dumps({**out, "mechanisms": rows}, indent=2))
        return 0
    print(f"Counters without a horizon for one person (at most {k} rounds, at least {b} apart):")
    print("the largest variance of the releases up to t, over that of a square root built for")
    print(f"horizon t and calibrated for the person, at the same budget rho = {args.rho:g}")
    print("(zCDP) for the person. Exact variances, not estimated.\n")
    _print_ratio_table(rows)
    return 0


def _print_ratio_table(rows: list[dict]) -> None:
    """The anytime tables' rows: each mechanism's ratio at every t = 2^e, and the worst."""
    ts = list(rows[0]["ratio_to_fixed_horizon_sqrt"]) if rows else []
    table = [
        {
            "mechanism": r["mechanism"],
            **{f"t{t}": r["ratio_to_fixed_horizon_sqrt"][t] for t in ts},
            "worst_ratio": r["worst_ratio"],
        }
        for r in rows
    ]
    columns = [("mechanism", "mechanism", "")]
    columns += [(f"t{t}", f"t=2^{int(t).bit_length() - 1}", ".3f") for t in ts]
    columns.append(("worst_ratio", "worst", ".3f"))
    _print_table(table, columns)


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from dponline.experiments.mechanism_table import calibration_table

    rows = calibration_table(args.T, args.d, args.epsilon, args.delta, args.low, args.high)
    if args.json:
        print(
            json.dumps(
                {
                    "T": args.T,
                    "d": args.d,
                    "epsilon": args.epsilon,
                    "delta": args.delta,
                    "bounds": [args.low, args.high],
                    "rows": rows,
                },
                indent=2,
            )
        )
        return 0
    print(
        f"Noise for (epsilon, delta) = ({args.epsilon:g}, {args.delta:g}) (Laplace: pure "
        f"epsilon), T = {args.T}, inputs in [{args.low:g}, {args.high:g}]^{args.d}."
    )
    print("'proven eps' is what the noise actually proves for these inputs.\n")
    _print_table(
        rows,
        [
            ("mechanism", "mechanism", ""),
            ("noise", "noise", ""),
            ("calibration", "calibration", ""),
            ("per_draw_std", "std per draw", ".4g"),
            ("max_release_std", "max release std", ".4g"),
            ("proven_epsilon", "proven eps", ".4g"),
        ],
    )
    for r in rows:
        if r["proven_epsilon"] > args.epsilon * (1 + 1e-9):
            print(
                f"warning: {r['mechanism']} {r['noise']} [{r['calibration']}] proves epsilon "
                f"{r['proven_epsilon']:.4g}, more than the {args.epsilon:g} asked: the paper's "
                "noise is too small for the budget it states (PrivacyWarning)",
                file=sys.stderr,
            )
    return 0


def _familywise(audits: int, alpha: float, *, rho: bool = False) -> str:
    """The table's chance of refuting some true claim: each test errs with chance at most
    ``alpha``, so all of them together with chance at most ``audits * alpha`` (union bound).
    ``rho``: the tests count a rho test beside each epsilon test whose claim states one."""
    noun = "test" if rho else "audit"
    which = " (an epsilon each, and a rho where the guarantee states one)" if rho else ""
    return (
        f"Each {noun} refutes a true claim with chance at most {alpha:g}; over the {audits} "
        f"{noun}{'' if audits == 1 else 's'} at the full noise{which}, some true claim is "
        f"refuted with chance at most {min(1.0, audits * alpha):.3g} (union bound)."
    )


def _cmd_audit_one_run(args: argparse.Namespace) -> int:
    import time

    from dponline.experiments.one_run_audit import one_run_table, refuted_learners

    started, cpu = time.perf_counter(), time.process_time()
    # None: each learner's plan (every row says how many canaries its run had)
    canaries = "per learner" if args.canaries is None else args.canaries
    significance = 1e-3
    rows = one_run_table(
        names=args.learners,
        canaries=args.canaries,
        significance=significance,
        seed=0 if args.seed is None else args.seed,
        options=_audit_options(args),
        calibration=args.calibration,
        progress=True,
    )
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    private = sorted({row["learner"] for row in rows})
    at_claim = refuted_learners(rows, "refuted_at_claim")
    at_tenth = refuted_learners(rows, "refuted_at_tenth")
    if args.json:
        print(
            json.dumps(
                {
                    "one_run": True,
                    "significance": significance,
                    "familywise_bound": min(1.0, len(rows) * significance),
                    "canaries": canaries,
                    "wall_seconds": wall,
                    "cpu_seconds": cpu,
                    "learners_audited": private,
                    "learners_refuted_at_claim": at_claim,
                    "learners_refuted_at_tenth": at_tenth,
                    "learners_seeing_nothing": sorted(
                        {row["learner"] for row in rows if row["sees_nothing"]}
                    ),
                    "learners": rows,
                },
                indent=2,
            )
        )
        return 0
    print(
        f"One-run audit (Steinke, Nasr & Jagielski 2023; f-DP bound of Mahloujifar et al.), "
        f"confidence {1 - significance:g}: canary rounds per run: {canaries} (column "
        "'canaries'). The guesser reads only the actions: a discriminant fitted on a third of "
        "the canaries, or a white box that knows the algorithm, never its noise (column "
        "'guesser'). One run per row and noise level; a claim is refuted when the lower bound "
        "exceeds it, and a bound below it refutes nothing. 'ceiling': the bound guesses all "
        "right would give; where it is not above the claim, no run could refute it.\n"
    )

    def verdict(row: dict[str, Any], key: str) -> str:
        return "REFUTED" if row[key] else "-" if row["can_refute"] else "cannot"

    _print_table(
        [{**r, **{k: verdict(r, k) for k in r if k.startswith("refuted_")}} for r in rows],
        [
            *_case_columns(rows),
            ("claimed_epsilon", "claimed eps", ".3g"),
            ("delta", "delta", ".3g"),  # the claim audited (some learners rebuilt at 1e-6)
            ("horizon", "T", "d"),
            ("canaries", "canaries", "d"),
            ("guesser", "guesser", ""),
            ("ceiling", "ceiling", ".2f"),
            ("lower_bound_at_claim", "lower (x1)", ".3f"),
            ("refuted_at_claim", "", ""),
            ("lower_bound_at_tenth", "lower (x0.1)", ".3f"),
            ("refuted_at_tenth", "", ""),
            ("lower_bound_at_hundredth", "lower (x0.01)", ".3f"),
            ("refuted_at_hundredth", "", ""),
        ],
    )
    print(
        f"\nRefuted at the claim: {len(at_claim)} of {len(private)} learners"
        f"{': ' + ', '.join(at_claim) if at_claim else ''}. Refuted at a tenth of the noise: "
        f"{len(at_tenth)} of {len(private)}{': ' + ', '.join(at_tenth) if at_tenth else ''}."
    )
    untestable = sorted({row["learner"] for row in rows if not row["can_refute"]})
    if untestable:
        print(
            f"Cannot be refuted by one run of this size at the claim's delta: "
            f"{', '.join(untestable)}."
        )
    blind = sorted({row["learner"] for row in rows if row["sees_nothing"] and row["can_refute"]})
    if blind:
        print(
            f"Saw nothing, not even at a hundredth of the noise: {', '.join(blind)}. The run has "
            "no power on this configuration, so 'not refuted' at the claim says nothing: "
            "docs/one-run-audit.md says what gives it power (many arms, an early release), or "
            "audit by many runs."
        )
    print(_familywise(len(rows), significance))
    print(f"Wall time {wall:.1f} s, CPU {cpu:.1f} s.")
    return 0


def _case_columns(rows: Sequence[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """The audit tables' first columns: learner, case, and the options of ``--option`` when
    given."""
    columns = [("learner", "learner", ""), ("case", "case", "")]
    if any(row.get("options") for row in rows):
        columns.append(("options", "options", ""))
    return columns


def _audit_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """The learner options of ``--option`` (None without any), refused without ``--learners``
    or when one is given twice."""
    if not args.option:
        return None
    if args.learners is None:
        raise ValueError("--option builds the named learners your way: name them with --learners")
    keys = [key for key, _ in args.option]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise ValueError(f"--option given twice for {', '.join(twice)}")
    if "calibration" in keys:
        raise ValueError("the calibration is --calibration's (tight or paper), not an --option")
    return dict(args.option)


def _cmd_audit(args: argparse.Namespace) -> int:
    from dponline.experiments.audit_table import audit_table, learner_audit_table

    if args.one_run:
        if args.T is not None or args.trials is not None or args.noise_fraction is not None:
            raise ValueError(
                "--T, --trials and --noise-fraction go without --one-run (one run per learner, "
                "at a tenth and a hundredth of the noise)"
            )
        return _cmd_audit_one_run(args)
    if args.canaries is not None:
        raise ValueError("--canaries goes with --one-run")
    if args.learners is not None and args.T is not None:
        raise ValueError("--T sets the counters' streams; with --learners no counter is audited")

    horizon = 16 if args.T is None else args.T
    counter_seed = 1 if args.seed is None else args.seed
    counter_trials = 50_000 if args.trials is None else args.trials
    rows = (
        audit_table(horizon=horizon, trials=counter_trials, seed=counter_seed, progress=True)
        if args.learners is None
        else []
    )
    learner_rows = learner_audit_table(
        names=args.learners,
        trials=args.trials,
        seed=args.seed,
        noise_fraction=args.noise_fraction,
        options=_audit_options(args),
        calibration=args.calibration,
        progress=True,
    )
    alpha = learner_rows[0]["alpha"]
    at_claim = [row for row in rows if row["noise_fraction"] == 1] + learner_rows
    # every claim tested at the full noise: an epsilon, and a rho where the guarantee states one
    claims = len(at_claim) + sum(row["claimed_rho"] is not None for row in at_claim)
    if any(row["alpha"] != alpha for row in rows + learner_rows):
        raise RuntimeError("the audit tables were run at different confidence levels")
    if args.json:
        print(
            json.dumps(
                {
                    "T": horizon if rows else None,
                    "trials": args.trials,
                    "familywise_bound": min(1.0, claims * alpha),
                    "rows": rows,
                    "learners": learner_rows,
                },
                indent=2,
            )
        )
        return 0
    print(
        f"Empirical privacy audit, confidence {1 - alpha:g}: a claim is refuted "
        "when the audit's lower bound on its epsilon (or its rho, where the guarantee states "
        "one) exceeds it.\n"
    )
    if rows:
        print(
            f"Continual-counting mechanisms, T = {horizon}, epsilon = 1, {counter_trials} "
            "trials per input:\n"
        )
        _print_table(
            rows,
            [
                ("mechanism", "mechanism", ""),
                ("noise", "noise", ""),
                ("noise_fraction", "noise x", "g"),
                ("claimed_epsilon", "claimed eps", ".3g"),
                ("epsilon_lower", "eps lower bound", ".3f"),
                ("verdict", "verdict", ""),
                ("claimed_rho", "claimed rho", ".4f"),
                ("rho_lower", "rho lower bound", ".4f"),
                ("rho_verdict", "rho verdict", ""),
            ],
        )
        print()
    less = (
        "a tenth, or less where the proof is known to be loose"
        if args.noise_fraction is None
        else f"{args.noise_fraction:g} of it"
    )
    asked = (_audit_options(args) or {}).get("epsilon", 1)
    print(
        f"Registered private learners ({args.calibration} calibration, epsilon = {asked:g} "
        "asked), on the "
        "neighbouring streams of their audit cases (the input of round 'changed' differs; "
        f"--json gives the values and the event counted), with the full noise and with less "
        f"({less}):\n"
    )
    _print_table(
        learner_rows,
        [
            *_case_columns(learner_rows),
            ("claimed_epsilon", "claimed eps", ".3g"),
            ("delta", "delta", ".3g"),
            ("horizon", "T", "d"),
            ("changed_round", "changed", "d"),
            ("trials", "trials", "d"),
            ("epsilon_lower", "eps lower (noise x1)", ".3f"),
            ("verdict", "verdict", ""),
            ("under_noise_fraction", "noise x", "g"),
            ("epsilon_lower_under_noised", "eps lower", ".3f"),
            ("verdict_under_noised", "verdict", ""),
        ],
    )
    with_rho = [row for row in learner_rows if row["claimed_rho"] is not None]
    if with_rho:
        print(
            "\nThe rho-zCDP claims, tested on the same runs with an event of their own (the "
            "Renyi divergence of the event's two Bernoulli laws: events near probability 1/2, "
            "where the epsilon test needs events of probability near delta, so it notices a "
            "smaller cut in the noise than the epsilon test does):\n"
        )
        _print_table(
            with_rho,
            [
                *_case_columns(with_rho),
                ("claimed_rho", "claimed rho", ".4f"),
                ("rho_lower", "rho lower (noise x1)", ".4f"),
                ("rho_verdict", "verdict", ""),
                ("under_noise_fraction", "noise x", "g"),
                ("rho_lower_under_noised", "rho lower", ".4f"),
                ("rho_verdict_under_noised", "verdict", ""),
            ],
        )
    print("\n" + _familywise(claims, alpha, rho=True))
    print(
        "'not refuted' certifies nothing: it says this audit found no violation, and each is "
        "checked only to refute its learner with much less noise (above); a learner off by a "
        "factor of 2 may pass (at half the noise 24 of the 35 audit cases are refuted: "
        'docs/design.md, "Two audits").'
    )
    return 0


def _cmd_counting(args: argparse.Namespace) -> int:
    from dponline.experiments.counting_demo import run_counting_demo

    out = Path(args.out)
    rows = run_counting_demo(epsilons=tuple(args.epsilons), seeds=args.seeds, out_dir=out)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("Private running means of daily returns: NYSE (O), 36 stocks, 5,651 days.")
    print(
        f"RMSE of the released running mean over the second half, {args.seeds} seeds; "
        "'predicted' from the exact variances.\n"
    )
    _print_table(
        rows,
        [
            ("mechanism", "mechanism", ""),
            ("noise", "noise", ""),
            ("calibration", "calibration", ""),
            ("epsilon", "eps asked", "g"),
            ("proven_epsilon", "eps proven", ".3g"),
            ("rmse_running_mean", "rmse", ".3e"),
            ("rmse_predicted", "predicted", ".3e"),
        ],
    )
    print(f"\nWrote {out / 'counting.csv'} and {out / 'counting.json'}.")
    return 0


def _cmd_side_by_side(args: argparse.Namespace) -> int:
    from dponline.experiments.side_by_side import run_side_by_side, write_side_by_side

    rows, rounds, env = run_side_by_side(
        horizon=args.T,
        dim=args.d,
        epsilon=args.epsilon,
        delta=args.delta,
        calibration=args.calibration,
        kind=args.kind,
        replicas=args.seeds,
        seed=args.seed,
    )
    title = (
        f"CTRL, DP-FTRL and streaming Frank-Wolfe at ({args.epsilon:g}, {args.delta:g})-DP "
        f"[{args.calibration}]: {args.kind} squared-loss stream, T = {args.T}, d = {args.d}"
    )
    written = write_side_by_side(rows, rounds, env, Path(args.out), title=title)
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=2))
        return 0
    print(title)
    print(f"regret against the best fixed point in hindsight, mean over {args.seeds} seeds\n")
    table = [
        {
            **r.as_dict(),
            "proven": "none" if r.epsilon is None else f"({r.epsilon:.3g}, {r.delta:.2g})",
            # one seed has no standard error: the regret alone, as ``run``'s table shows it
            "regret_pm": f"{r.regret:.1f}" + (f" +- {r.regret_se:.1f}" if args.seeds > 1 else ""),
        }
        for r in rows
    ]
    _print_table(
        table,
        [
            ("learner", "learner", ""),
            ("proven", "proven (eps, delta)", ""),
            ("regret_pm", "regret", ""),
            ("switches", "switches", ".0f"),
            ("seconds", "seconds", ".1f"),
        ],
    )
    print("\nWrote " + ", ".join(str(w) for w in written) + ".")
    return 0


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from dponline.experiments import han2024

    runs = args.runs if args.runs is not None else (3 if args.quick else 10)
    header = han2024.describe(runs=runs, quick=args.quick, workers=args.workers)
    print("\n".join(header), file=sys.stderr if args.json else sys.stdout, flush=True)
    result = han2024.reproduce_han2024(
        runs=runs,
        quick=args.quick,
        out=args.out,
        workers=args.workers,
        seed=args.seed,
        progress=True,
        backend=args.backend,
        resume=not args.fresh,
    )
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for calibration in han2024.CALIBRATIONS:
        print(f"\n{han2024.TABLE_TITLES[calibration]}\n")
        _print_table(han2024.table_rows(result, calibration), han2024.TABLE_COLUMNS)
    print()
    for note in result["footnotes"]:
        print(f"- {note}")
    if result["plot"] is not None:
        print(f"\nPlot: {result['plot']} (data: {result['curves_csv']})")
    elif result["curves_csv"] is not None:
        from dponline.experiments.report import NO_PLOTS

        print(f"\nNo plot (the {NO_PLOTS}); data: {result['curves_csv']}")
    if result["reused_tasks"]:
        print(
            f"{result['reused_tasks']} of {result['tasks']} tasks were read from "
            f"{result['checkpoints']} (finished by an earlier run of this version); --fresh "
            "recomputes them."
        )
    print(
        f"Wall time {result['wall_seconds']:.1f} s on {result['workers']} worker "
        f"process{'es' if result['workers'] > 1 else ''} (spec: {result['spec']})."
    )
    return 0


_SUMMARY_COLUMNS = [
    ("environment", "environment", ""),
    ("label", "learner", ""),
    ("calibration", "calibration", ""),
    ("epsilon", "eps", "g"),
    ("proven_epsilon", "eps proven", ".3g"),
    ("delta", "delta", ".2g"),
    ("T", "T", "d"),
    ("seeds", "seeds", "d"),
    ("regret_mean", "regret", ".1f"),
    ("regret_ci95", "+-95%", ".1f"),
    ("regret_median", "median", ".1f"),
]


def _summary_rows(summary: Any) -> list[dict[str, Any]]:
    rows = summary.to_dict(orient="records")
    for r in rows:
        for k, v in r.items():
            if isinstance(v, float) and v != v:  # NaN (non-private rows)
                r[k] = None
    return rows


def _print_summary(rows: list[dict[str, Any]]) -> None:
    shown = [{k: ("-" if v is None else v) for k, v in r.items()} for r in rows]
    columns = list(_SUMMARY_COLUMNS)
    if any(str(r.get("unit") or "").startswith("person") for r in rows):
        # an epsilon per person beside one per round: say which
        columns.insert(5, ("unit", "unit of privacy", ""))
    if any(r.get("switches_mean") is not None for r in rows):  # count_switches
        columns.append(("switches_mean", "switches", ".1f"))
    if any(r.get("tuned") for r in rows):  # the candidate the validation set chose
        columns.append(("tuned", "tuned", ""))
    if any(r.get("final_loss_mean") is not None for r in rows):  # held-out evaluation
        columns += [("final_loss_mean", "held-out", ".4g"), ("final_loss_ci95", "+-95%", ".2g")]
    _print_table(shown, columns)


def _edge_of_grid(tasks: Sequence[Any], rows: list[dict[str, Any]]) -> list[str]:
    """A sentence for each tuned row whose chosen value is the smallest or largest of three or
    more numeric candidates: the best may lie beyond the grid."""

    def number(v: Any) -> bool:
        return isinstance(v, int | float) and not isinstance(v, bool) and v == v  # not NaN

    def key(environment: str, label: str, calibration: str, epsilon: Any) -> tuple:
        return environment, label, calibration, None if epsilon is None else float(epsilon)

    grids = {
        key(t.environment_label or t.environment, t.display_label, t.calibration, t.epsilon): t.tune
        for t in tasks
    }
    notes = []
    for row in rows:
        chosen = json.loads(row.get("tuned") or "{}")
        grid = grids.get(
            key(row["environment"], row["label"], row["calibration"], row.get("epsilon")), {}
        )
        where = "" if row.get("epsilon") is None else f" ({row['calibration']}, epsilon "
        where += "" if row.get("epsilon") is None else f"{row['epsilon']:g})"
        for option, value in chosen.items():
            values = [v for v in grid.get(option, []) if number(v)]
            if len(values) >= 3 and number(value) and value in (min(values), max(values)):
                end = "smallest" if value == min(values) else "largest"
                notes.append(
                    f"{row['label']}{where} on {row['environment']} chose {option} = {value}, "
                    f"the {end} of its candidates: the best value may lie beyond them"
                )
    return notes


def _cmd_demo(args: argparse.Namespace) -> int:
    from dponline.experiments.demo import DEMO_SPEC, FULL_DEMO_SPEC, run_demo

    _, summary, index = run_demo(args.out, full=args.full, seeds=args.seeds, backend=args.backend)
    rows = _summary_rows(summary)
    if args.json:
        print(json.dumps({"report": str(index), "summary": rows}, indent=2))
        return 0
    spec = FULL_DEMO_SPEC if args.full else DEMO_SPEC
    settings = [e.get("label", e["name"]) for e in spec["environments"]]
    print(f"dponline demo: every learner on {len(settings)} settings: {', '.join(settings)}.")
    print("Final regret against the best fixed decision in hindsight, mean over seeds; 'eps")
    print("proven' is what each learner's noise proves (the report explains each setting).\n")
    _print_summary(rows)
    print(f"\nReport: {index}")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from dponline.experiments.checkpoints import CHECKPOINT_SUFFIX, RESULT_SUFFIX
    from dponline.experiments.lower_bound_curves import (
        lower_bound_references,
        uniform_play_regret,
    )
    from dponline.experiments.report import NO_PLOTS, have_matplotlib, summarise, write_report
    from dponline.experiments.runner import run_sweep, stored_key, stored_results
    from dponline.experiments.spec import load_spec

    spec = load_spec(args.spec)
    overrides: dict[str, Any] = {
        k: getattr(args, k) for k in ("seeds", "horizon") if getattr(args, k)
    }
    if args.modules:  # as the spec's own field: the workers import them, the keys follow them
        from dponline.registry import load_modules

        loaded = load_modules(args.modules)  # main imported them: their names and paths
        overrides["modules"] = tuple(dict.fromkeys((*spec.modules, *loaded)))
    if overrides:  # a smaller look at the same spec (its own seeds and data otherwise)
        spec = spec.overridden(**overrides)
    out = Path(args.out) if args.out else Path(f"{Path(args.spec).stem}-report")
    ckpt = None if args.no_checkpoint else out / "checkpoints"
    tasks = spec.tasks()
    reused = stored_results(tasks, ckpt, spec.checkpoint_every)
    # checkpoints there, none of this run's tasks (finished or partial): everything runs anew
    keys = {stored_key(t, spec.checkpoint_every) for t in tasks}
    there = [f.name for f in ckpt.iterdir()] if ckpt is not None and ckpt.is_dir() else []
    mine = {f"{k}{suffix}" for k in keys for suffix in (RESULT_SUFFIX, CHECKPOINT_SUFFIX)}
    earlier = bool(there) and not mine & set(there)
    made = [d for d in (out, out / "checkpoints") if not d.exists()]
    try:
        results = run_sweep(
            tasks,
            backend=args.backend or spec.backend,
            workers=args.workers or spec.workers,
            checkpoint_dir=ckpt,
            checkpoint_every=spec.checkpoint_every,
        )
    except BaseException:
        for folder in reversed(made):  # a failed run leaves no empty folders behind
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        raise
    index = write_report(
        results,
        out,
        title=spec.name,
        captions=spec.captions(),
        references=lower_bound_references(spec),
        uniform_regret=uniform_play_regret(spec),
    )
    rows = _summary_rows(summarise(results))
    notes = [*spec.notes, *_edge_of_grid(tasks, rows)]
    if args.json:
        extra: dict[str, Any] = {"notes": notes} if notes else {}
        if not have_matplotlib():
            extra["report_without_plots"] = NO_PLOTS
        print(json.dumps({"report": str(index), "summary": rows, **extra}, indent=2))
        return 0
    print(f"{spec.name}\n")
    for note in notes:
        print(f"Note: {note}.")
    if notes:
        print()
    _print_summary(rows)
    if reused:
        print(
            f"\n{reused} of {len(tasks)} tasks were read from {ckpt} (finished earlier by this "
            "code, spec and checkpoint spacing); --no-checkpoint recomputes them."
        )
    elif earlier:
        print(
            f"\nNone of the {len(tasks)} tasks was in {ckpt}: all ran now (the code, a module, "
            "a data file or the spec changed since the checkpoints there were written)."
        )
    print(f"\nReport: {index}" + ("" if have_matplotlib() else f" (tables only: the {NO_PLOTS})"))
    return 0


def _named(kind: str, names: Sequence[str] | None, catalogue: Any) -> list[str]:
    """``names`` (default: all of ``catalogue``), each checked, in the order given."""
    from dponline.spelling import did_you_mean

    if not names:
        return list(catalogue)
    for name in names:
        if name not in catalogue:
            raise ValueError(
                f"unknown {kind} {name!r}{did_you_mean(name, catalogue)}; expected some of "
                f"{sorted(catalogue)}"
            )
    return list(names)


def _cmd_list(args: argparse.Namespace) -> int:
    from dponline.environments.catalogue import ENVIRONMENTS
    from dponline.registry import ACTION_SPACE_WORDS, learners

    catalogue = learners()
    rows = [catalogue[n].describe(ENVIRONMENTS) for n in _named("learner", args.names, catalogue)]
    if args.json:
        print(json.dumps({"learners": rows}, indent=2))
        return 0
    if args.markdown:
        print(_guarantees_markdown(rows), end="")
        return 0
    for r in rows:
        print(f"{r['name']}  [{r['setting']}]")
        print(f"  paper:        {r['paper']}")
        print(f"  guarantee:    {r['guarantee']}")
        print(f"  calibrations: {', '.join(r['calibrations']) or '-'}")
        print(f"  observes:     {r['feedback_kind']}")
        spaces = [
            f"{a}: {ACTION_SPACE_WORDS[a]}" if a in ACTION_SPACE_WORDS else a
            for a in r["action_space"]
        ]
        print(f"  plays:        {'; '.join(spaces)}")
        print(f"  environments: {', '.join(r['environments']) or '-'}")
        if r["private"]:
            print(
                "  person:       "
                + (
                    "proves a person's k rounds >= b apart itself where its configuration can "
                    "(participations, min_separation)"
                    if r["person_level"]
                    else "a person's k rounds by group privacy (participations)"
                )
            )
        if r["anytime"]:
            print("  no horizon:   runs without one (horizon=None, or the option anytime)")
        for k, v in r["options"].items():
            print(f"  option {k}: {v}")
        print()
    if any(r["private"] for r in rows):
        print(textwrap.fill(FLOATING_POINT_WORDS, width=100))
    return 0


def _cmd_environments(args: argparse.Namespace) -> int:
    import inspect

    from dponline.environments.catalogue import ENVIRONMENTS
    from dponline.registry import learners

    rows = []
    for name in _named("environment", args.names, ENVIRONMENTS):
        entry = ENVIRONMENTS[name]
        params = list(inspect.signature(entry.build).parameters.values())[2:]  # horizon, rng
        options = {
            p.name: (None if p.default is inspect.Parameter.empty else p.default) for p in params
        }
        runs = sorted(
            n
            for n, e in learners().items()
            if any(e.runs_in(entry.feedback_kind, space) for space in entry.action_spaces)
        )
        rows.append(
            {
                "name": name,
                "description": entry.description,
                "feedback_kind": entry.feedback_kind.value,
                "action_space": list(entry.action_spaces),
                "options": options,
                "required": [p.name for p in params if p.default is inspect.Parameter.empty],
                "learners": runs,
            }
        )
    if args.json:
        print(json.dumps({"environments": rows}, indent=2, default=repr))
        return 0
    for r in rows:
        print(f"{r['name']}  [{r['feedback_kind']}; actions: {', '.join(r['action_space'])}]")
        print(f"  {r['description']}")
        shown = ", ".join(
            f"{k} (required)" if k in r["required"] else f"{k}={v!r}"
            for k, v in r["options"].items()
        )
        print(f"  options:  {shown or '-'}")
        print(f"  learners: {', '.join(r['learners']) or '-'}")
        print()
    return 0


#: what the guarantees shown leave out, said under every list of them
FLOATING_POINT_WORDS = (
    "Every guarantee is proven in exact arithmetic. In floating point, the numbers a learner "
    "publishes as estimates (the K-armed learners' `released_means()`) are rounded to "
    "multiples of 2^-16, which leaves, by our argument and not a theorem, a delta of about "
    "b 2^-35 per published value (b the noise's scale in that value's units) beside the delta "
    "shown; decisions are not rounded, and a deployment that publishes other noisy numbers "
    "rounds them itself (`dponline.privacy.floating_point`)."
)


def _guarantees_markdown(rows: list[dict[str, Any]]) -> str:
    """The documentation site's page of every learner's guarantee (docs/guarantees.md)."""

    def cell(text: str) -> str:  # "f(<v, x>, y)" must not read as an HTML tag
        text = text.replace("<", "&lt;").replace(">", "&gt;")
        return text.replace("|", "\\|").replace("\n", " ")

    lines = [
        "# The guarantee of every learner",
        "",
        "Generated by `dponline list --markdown` from the registry (a test keeps this page and "
        "the registry in step). Each private learner's guarantee holds for inputs within the "
        "bounds it was built with; inputs outside raise `ValueError` unless clipping was asked "
        "for. `paper` runs the paper's own noise formulas, `tight` the least noise we can "
        "prove for the same budget; every run reports the epsilon its noise proves. The "
        "guarantee column states one round's; 'a person' says how a person's k rounds (the "
        "options participations and min_separation) are protected: 'itself' where the "
        "learner's proof covers the person's pattern, 'group privacy' where one round's "
        "guarantee is asked at epsilon / k and stated for the person (any k rounds); 'no "
        "horizon' whether it runs without a known end (horizon=None). A person's cap is the "
        "caller's to enforce (`ParticipationCap`), and a person's guarantee protects what their "
        "rounds hold, not whether they took part. " + FLOATING_POINT_WORDS,
        "",
        "| learner | paper | setting | guarantee | a person | no horizon | calibrations |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        person = "-" if not r["private"] else "itself" if r["person_level"] else "group privacy"
        lines.append(
            f"| `{r['name']}` | {cell(r['paper'])} | {cell(r['setting'])} | "
            f"{cell(r['guarantee'])} | {person} | {'yes' if r['anytime'] else 'no'} | "
            f"{', '.join(r['calibrations']) or '-'} |"
        )
    return "\n".join(lines) + "\n"


def _modules_argument(p: argparse.ArgumentParser) -> None:
    """``--modules``: files or modules of the user's that register learners, imported first
    (what a spec's ``modules`` field does for a run; docs/extending.md)."""
    p.add_argument(
        "--modules",
        action="append",
        default=None,
        metavar="MODULE",
        help="import this first: a .py file (a path) or a module name that registers learners "
        "of your own (docs/extending.md); repeat for several",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dponline",
        description="Differentially private online learning: continual counting, calibrations, "
        "privacy audits.",
    )
    parser.add_argument("--version", action="version", version=f"dponline {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "demo",
        help="the main job: every learner on real bundled data, "
        "a table and an HTML report in --out DIR",
    )
    p.add_argument("--out", default="dponline-report", help="output folder (default: %(default)s)")
    p.add_argument(
        "--seeds",
        type=_positive_int,
        default=None,
        help="seeds per setting (default: 10; 20 with --full) and runs per learner of the "
        "replay section (default: 5)",
    )
    p.add_argument(
        "--full",
        action="store_true",
        help="the online and bandit learners on every setting at 20 seeds (about 11 minutes "
        "on two cores)",
    )
    p.add_argument(
        "--backend",
        choices=["local", "serial", "ray"],
        default="local",
        help="where the cells run (default: %(default)s; ray needs dponline[ray])",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser("run", help="run an experiment spec (TOML) and write its report")
    p.add_argument(
        "spec",
        help="path to a TOML spec (the repository's examples/ has some; docs/experiments.md "
        "gives every field), or the name of a packaged one: han2024, han2024_quick, "
        "side_by_side",
    )
    p.add_argument("--out", default=None, help="output folder (default: ./<spec file name>-report)")
    p.add_argument(
        "--backend",
        choices=["local", "serial", "ray"],
        default=None,
        help="override the spec's backend",
    )
    p.add_argument(
        "--no-checkpoint",
        action="store_true",
        help="do not checkpoint (by default OUT/checkpoints lets a run resume)",
    )
    p.add_argument("--seeds", type=_positive_int, default=None, help="override the spec's seeds")
    p.add_argument(
        "--workers",
        type=_positive_int,
        default=None,
        help="override the spec's worker processes (backend local; default one per core)",
    )
    p.add_argument(
        "--horizon",
        "--T",
        dest="horizon",
        type=_positive_int,
        default=None,
        help="override the spec's horizon (rounds; real data is cut to it)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    _modules_argument(p)
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("list", help="every learner with its paper, setting and guarantee")
    p.add_argument("names", nargs="*", metavar="NAME", help="only these learners")
    _modules_argument(p)
    form = p.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="machine-readable output")
    form.add_argument(
        "--markdown", action="store_true", help="the guarantees as a Markdown page (the docs')"
    )
    p.set_defaults(func=_cmd_list)

    p = sub.add_parser(
        "environments",
        help="every environment with its options and the learners that run in it",
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="only these environments")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    _modules_argument(p)
    p.set_defaults(func=_cmd_environments)

    p = sub.add_parser(
        "counting",
        help="private running means of real stock returns with every continual-counting mechanism",
    )
    p.add_argument(
        "--out", default="dponline-report/counting", help="output folder (default: %(default)s)"
    )
    p.add_argument(
        "--seeds", type=_positive_int, default=8, help="seeds per setting (default: %(default)s)"
    )
    p.add_argument(
        "--epsilons",
        type=_positive_float,
        nargs="+",
        default=[0.5, 1.0, 4.0],
        help="privacy levels (default: 0.5 1 4)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_counting)

    p = sub.add_parser("mechanisms", help="continual-counting mechanisms, max and mean variance")
    _horizon_argument(p, None, "horizon (default: 1024)")
    p.add_argument(
        "--rho", type=_positive_float, default=0.5, help="zCDP budget (default: %(default)s)"
    )
    p.add_argument(
        "--epsilon",
        type=_positive_float,
        default=None,
        help="pure-DP budget of the Laplace table (default: 1)",
    )
    p.add_argument(
        "--participations",
        type=_positive_int,
        default=1,
        help="the unit of privacy is a person with at most this many rounds (default: 1, a round)",
    )
    p.add_argument(
        "--min-separation",
        type=_positive_int,
        default=1,
        help="a person's rounds lie at least this many rounds apart (default: %(default)s)",
    )
    p.add_argument(
        "--anytime",
        action="store_true",
        help="counters without a horizon: their variance against a square root built for t "
        "(for one person with --participations and --min-separation)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_mechanisms)

    p = sub.add_parser("calibrate", help="noise of each mechanism and calibration for a budget")
    p.add_argument(
        "--epsilon", type=_positive_float, default=1.0, help="epsilon (default: %(default)s)"
    )
    p.add_argument(
        "--delta",
        type=_delta,
        default=1e-6,
        help="delta (default: %(default)s; 0: pure DP, the Laplace rows only)",
    )
    _horizon_argument(p, 10_000, "horizon (default: %(default)s)")
    p.add_argument("--d", type=_positive_int, default=10, help="dimension (default: %(default)s)")
    p.add_argument(
        "--low", type=float, default=0.0, help="inputs lie in [low, high]^d (default: %(default)s)"
    )
    p.add_argument("--high", type=float, default=1.0, help="see --low (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_calibrate)

    p = sub.add_parser(
        "audit",
        help="empirical privacy audit of every counting mechanism and every private learner",
    )
    _horizon_argument(p, None, "horizon of the counters' streams (default: 16)")
    _modules_argument(p)
    p.add_argument(
        "--trials",
        type=_positive_int,
        default=None,
        help="runs per input, a quarter as many pilot runs choosing the event (default: "
        "50,000 for counters, each learner's own test case's)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of every audit (default: 1 for counters, each learner's own; 0 with --one-run)",
    )
    p.add_argument(
        "--one-run",
        action="store_true",
        help="instead: audit every private learner in one run each, with canary rounds "
        "(at its claim, a tenth and a hundredth of its noise; docs/one-run-audit.md)",
    )
    p.add_argument(
        "--learners",
        nargs="+",
        action="extend",  # --learners a --learners b audits both
        default=None,
        metavar="NAME",
        help="only these learners (default: every private learner; without --one-run also "
        "every counting mechanism, none when learners are named)",
    )
    p.add_argument(
        "--noise-fraction",
        type=float,
        default=None,
        help="without --one-run: the learners' second row runs with this fraction of the "
        "calibrated noise, in (0, 1) (default: each audit case's, a tenth), to measure what "
        "the audit can catch",
    )
    p.add_argument(
        "--canaries",
        type=_positive_int,
        default=None,
        help="with --one-run: canary rounds per run (default: each learner's plan, 1200 or "
        "more; a third fit the guesser)",
    )
    p.add_argument(
        "--option",
        nargs="+",
        action="extend",  # --option a=1 --option b=2 keeps both (a second one replaced the first)
        type=_learner_option,
        default=None,
        metavar="KEY=VALUE",
        help="with --learners: build them with these options over their audit case's "
        "(`dponline list` gives each learner's), e.g. epsilon=0.5 delta=1e-6, or "
        "participations=4 min_separation=10 (a person's claim: with --one-run); the audit's "
        "neighbouring inputs stay the case's",
    )
    p.add_argument(
        "--calibration",
        choices=("tight", "paper"),
        default="tight",
        help="the calibration the learners are built with (default: tight)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_audit)

    p = sub.add_parser(
        "side-by-side",
        help="CTRL, DP-FTRL and the streaming Frank-Wolfe on one smooth stream at one budget",
    )
    _horizon_argument(p, 2_000, "rounds (default: %(default)s)")
    p.add_argument("--d", type=_positive_int, default=5, help="dimension (default: %(default)s)")
    p.add_argument(
        "--epsilon", type=_positive_float, default=1.0, help="epsilon (default: %(default)s)"
    )
    p.add_argument(
        "--delta", type=_positive_float, default=1e-6, help="delta (default: %(default)s)"
    )
    p.add_argument(
        "--calibration",
        choices=["tight", "paper"],
        default="tight",
        help="calibration of every private learner (default: %(default)s)",
    )
    p.add_argument(
        "--kind",
        choices=["stochastic", "adversarial"],
        default="stochastic",
        help="the stream (default: %(default)s)",
    )
    p.add_argument("--seeds", type=_positive_int, default=4, help="seeds (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="seed of data and noise (default: 0)")
    p.add_argument(
        "--out",
        default="dponline-report/side-by-side",
        help="folder for the table, plot and page (default: %(default)s)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_side_by_side)

    p = sub.add_parser(
        "reproduce", help="regenerate a paper's experiment: han2024 (Han et al. Tables 2-4)"
    )
    p.add_argument("experiment", choices=["han2024"], help="which experiment")
    p.add_argument(
        "--runs",
        type=_positive_int,
        default=None,
        help="runs per cell (default: 10; 3 with --quick)",
    )
    p.add_argument(
        "--out",
        default="dponline-report/han2024",
        help="folder for the plot (default: %(default)s)",
    )
    p.add_argument("--quick", action="store_true", help="a small smoke version (seconds)")
    p.add_argument(
        "--workers",
        type=_positive_int,
        default=None,
        help="worker processes (default: the number of cores; 1 with --quick)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of data and noise (default: 0)")
    p.add_argument(
        "--backend",
        choices=["local", "serial", "ray"],
        default="local",
        help="where the cells run (default: %(default)s; ray needs dponline[ray])",
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="recompute every cell instead of reusing the cells stored in OUT/checkpoints",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_reproduce)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    from dponline.experiments.progress import Interrupted

    shown = warnings.showwarning
    warnings.showwarning = _warning_line(args.command)
    try:
        if getattr(args, "modules", None):
            _load_modules(args.modules)
        return int(args.func(args))
    except ValueError as exc:
        print(f"dponline {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except Warning as exc:  # python -W error: a warning raised as an error, said in one line
        kind = type(exc).__name__
        print(f"dponline {args.command}: error ({kind} raised by -W error): {exc}", file=sys.stderr)
        return 2
    except (Interrupted, KeyboardInterrupt) as exc:
        print(f"dponline {args.command}: {_interrupted(args, exc)}", file=sys.stderr)
        return 130
    except BrokenPipeError:
        if not _stdout_reader_gone():
            raise  # another pipe of the command's: a real error
        # stdout's reader stopped early (``dponline list | head``): nothing more can reach it;
        # point stdout at /dev/null so the exit flush is quiet
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a process a pipe closed
    finally:
        warnings.showwarning = shown


def _warning_line(command: str) -> Any:
    """How the command shows a warning: one line naming the command and the warning's kind,
    not the place in the code (which, from the command line, is the installed script's
    ``sys.exit(main())``)."""

    def show(
        message: Any,
        category: type[Warning],
        filename: str = "",
        lineno: int = 0,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        kind = "warning" if category is UserWarning else category.__name__
        print(f"dponline {command}: {kind}: {message}", file=file or sys.stderr)

    return show


def _load_modules(modules: Sequence[str]) -> None:
    """``--modules``, the user's modules imported; an error is one line (ValueError) naming
    the module, its own error chained."""
    from dponline.registry import load_modules

    try:
        load_modules(modules)
    except (ValueError, ImportError) as exc:  # a module's own error is chained
        raise ValueError(f"--modules: {exc}") from exc


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe whose reading end is closed (poll reports an error on it)."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll, or stdout is not a file
        return False


def _interrupted(args: argparse.Namespace, exc: BaseException) -> str:
    """One line for Ctrl-C: what was kept and how to resume."""
    done = f"after {exc.done} of {exc.total} tasks; " if hasattr(exc, "done") else ""
    resumable = {
        "run": not getattr(args, "no_checkpoint", False),
        "demo": True,
        "reproduce": True,
    }.get(args.command, False)
    if resumable:
        return (
            f"interrupted {done}finished tasks and checkpoints are kept: run the same command "
            "again to resume"
        )
    return f"interrupted {done}nothing to resume: run the command again"


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
