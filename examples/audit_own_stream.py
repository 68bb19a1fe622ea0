"""A deployment's one-run audit on its own stream, and on a stream built for the audit's power.

    python examples/audit_own_stream.py

DP-IMED at epsilon = 1 as deployed over 20 items whose click rates lie between 0.2% and 0.8%
(losses 1 - click, drawn once and fixed in advance), audited in one run with 2,000 canaries 8
rounds apart at its full noise, a tenth and a hundredth (``noise_fraction``), by the default
guesser and by the one that reads the order of the arms; then the same learner class and
options over 1,000 arms whose losses are all 1/2, where the arm-order guesser has the power to
refute a tenth. docs/one-run-audit.md reads the printed lines.
"""

import numpy as np

from dponline.bandits import DPIMED
from dponline.experiments.one_run_audit import CanaryPlan, arm_order_model, one_run_audit
from dponline.privacy import PrivacyBudget

plan = CanaryPlan(canaries=2000, gap=8)
T = plan.horizon


def audit(stream, fraction, reads_arms):
    """The one-run lower bound on epsilon for a fresh DP-IMED on ``stream``."""
    arms = stream.shape[1]
    learner = DPIMED(arms, T, budget=PrivacyBudget(1.0), rng=0)
    result = one_run_audit(
        learner,
        stream,
        (np.zeros(arms), np.ones(arms)),  # a canary round: every item clicked, or none
        plan,
        dim=arms,
        noise_fraction=fraction,
        white_box=arm_order_model(learner) if reads_arms else None,
    )
    return result.result.epsilon_lower


rates = np.random.default_rng(2024).uniform(0.002, 0.008, 20)
clicks = 1.0 - (np.random.default_rng(5).random((T, 20)) < rates)  # the deployment's stream
half = np.full((T, 1000), 0.5)  # built for the audit's power
for name, stream, guessers in (("20 items", clicks, (False, True)), ("1,000 arms", half, (True,))):
    for reads_arms in guessers:
        bounds = [audit(stream, f, reads_arms) for f in (1.0, 0.1, 0.01)]
        guesser = "arm order" if reads_arms else "default"
        print(f"{name}, {guesser}: " + " ".join(f"{b:.3f}" for b in bounds))
