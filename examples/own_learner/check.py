"""Check the example learner as the library checks its own (docs/extending.md):

python examples/own_learner/check.py
"""

from pathlib import Path

from dponline.checks import check_learner
from dponline.registry import learners, load_modules

load_modules([str(Path(__file__).with_name("explore_then_commit.py"))])
entry = learners()["dp-explore-then-commit"]
check_learner(entry)  # the battery and the audit; an AssertionError says what failed
print(f"{entry.name}: every check of the battery passes, the audit included")
