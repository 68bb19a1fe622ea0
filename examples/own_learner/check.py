"""Check the example learners as the library checks its own (docs/extending.md):

    python examples/own_learner/check.py
"""

from pathlib import Path

from dponline.checks import check_learner
from dponline.experiments.learner_audit import audit_learner
from dponline.registry import learners, load_modules

here = Path(__file__).parent
load_modules([str(here / "explore_then_commit.py"), str(here / "noisy_leader.py")])
for name in ("dp-explore-then-commit", "dp-noisy-leader", "noisy-leader"):
    entry = learners()[name]
    check_learner(entry)  # the battery, and the audit of a private learner
    print(f"{name}: every check of the battery passes")
    for fraction in (1.0, 0.5, 0.1) if entry.private else ():
        audit = audit_learner(entry, entry.test_cases[0], noise_fraction=fraction)
        print(f"  {fraction:g} of the noise: {audit}")
