"""A response-adaptive trial run as a deployment would run it, end to end.

    python examples/adaptive_trial.py

Four arms (success rates 0.30, 0.35, 0.40 and 0.45, unknown to the trial), 3,000 participants
allocated one at a time by DP-IMED at epsilon = 1 behind ``DelayedPolicy`` with ``hold=200``:
each outcome is known 50 to 150 allocations after its own, one in ten participants is lost to
follow-up (cancelled), and every update names its pull's ticket. The policy's state is saved
after every allocation and the run restarts from the file once, a third of the way in. At the
end, each arm's mean is released from all its recorded outcomes at epsilon' = 0.5
(``laplace_arm_means``), 1.5 in all. Prints the guarantee, the allocations per arm, the final
estimates with the noise's interval, and the same allocations without the restart.
docs/private-bandits.md reads the printed lines.
"""

import json
import tempfile
from pathlib import Path

import numpy as np

from dponline.bandits.delayed import DelayedPolicy
from dponline.bandits.estimates import laplace_arm_means

ARMS = ["A", "B", "C", "D"]
RATES = {"A": 0.30, "B": 0.35, "C": 0.40, "D": 0.45}
PARTICIPANTS = 3000


def new_policy() -> DelayedPolicy:
    return DelayedPolicy.from_registry("dp-imed", ARMS, None, epsilon=1.0, hold=200, seed=2026)


def run(restart_at: int | None, folder: Path) -> tuple[DelayedPolicy, list, dict, dict]:
    """The trial; with ``restart_at``, the process 'dies' there and resumes from the file."""
    world = np.random.default_rng(7)  # the participants: outcomes, delays, losses
    outcome = world.random(PARTICIPANTS)
    delay = world.integers(50, 151, PARTICIPANTS)
    lost = world.random(PARTICIPANTS) < 0.1
    policy, due, allocated = new_policy(), [], []
    totals, counts = dict.fromkeys(ARMS, 0.0), dict.fromkeys(ARMS, 0)  # the trial's records
    for i in range(PARTICIPANTS):
        if i == restart_at:  # a restart: the policy comes back from its last save
            policy = new_policy()
            policy.load_state_dict(json.loads((folder / "policy.json").read_text()))
        for _, ticket, arm in sorted(d for d in due if d[0] <= i):  # outcomes known by now
            if lost[ticket]:
                policy.cancel(arm, ticket=ticket)
            else:
                success = bool(outcome[ticket] < RATES[arm])
                policy.update(arm, success, ticket=ticket)
                totals[arm] += success
                counts[arm] += 1
        due = [d for d in due if d[0] > i]
        arm = policy.pull(ARMS)
        allocated.append(arm)
        due.append((i + int(delay[i]), policy.last_ticket, arm))
        # saved before the allocation is acted on (the trial's own records, kept beside it,
        # would be saved with it; they are not lost here)
        state = policy.state_dict()
        (folder / "policy.json").write_text(json.dumps(state, default=lambda a: a.tolist()))
    return policy, allocated, totals, counts


with tempfile.TemporaryDirectory() as tmp:
    policy, allocated, totals, counts = run(1000, Path(tmp))
    _, uninterrupted, _, _ = run(None, Path(tmp))

print(policy.privacy)
print("allocated:", {a: allocated.count(a) for a in ARMS}, "late:", policy.late)
final = laplace_arm_means(
    np.array([totals[a] for a in ARMS]), np.array([counts[a] for a in ARMS]), 0.5, rng=11
)
low, high = final.interval()
for a, m, lo, hi, n in zip(ARMS, final.means, low, high, final.counts, strict=True):
    print(f"{a}: {m:.3f} [{lo:.3f}, {hi:.3f}] from {n} outcomes")
print("the same allocations without the restart:", allocated == uninterrupted)
