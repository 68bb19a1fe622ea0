"""Private online Lipschitz optimisation in one and two dimensions: Theorem 14 of Agarwal,
Kale, Singh & Thakurta (2023), Section 4.

The losses are G-Lipschitz on a box in R^1 or R^2 and need not be convex. The learner runs
private Hedge over the points of a dyadic grid (the experts), but the continual counter does
not sum the loss vectors l_t (restricted to the grid): it sums their transforms M l_t
(Lemma 16), with

    (M l)(x) = l(x) - l(p(x)),

where p maps a grid point to its dyadic parent (:class:`DyadicGrid`). Every x reaches the
origin through at most k + 1 parents, so l(x) - l(0) is the sum of (M l) along that chain
(Eq. 4.1; :meth:`DyadicGrid.inverse` is M-dagger), and Hedge applies it to the noisy sums. The
point of the transform is its sensitivity: ||M l||_2 <= G sqrt(sum_x ||x - p(x)||^2), at most
G D sqrt(C_d) (Eq. 4.2, C_1 = 1, C_2 = 2 (k + 1)), while ||l||_2 over the (2T)^d points grows
with T. The noise on each expert's loss is a sum of at most k + 1 counter noises
(||M-dagger||_{2 -> inf} = sqrt(depth), Eq. 4.3).

The learner plays a grid point drawn from Hedge's weights (post-processing), so it has the
counter's guarantee: event-level DP over loss sequences differing in one round (or, with a
user-level budget, in one person's rounds, as the counter's guarantee states), for losses whose
transform lies in the counter's ball, which every G-Lipschitz loss's does (checked each round).

Anytime (``horizon=None``; ours): the inner private Hedge is the anytime DP-FTRL
(:mod:`dponline.online.ftrl`: the anytime counter, whose guarantee holds for the releases up to
every t, and the rate eta_t = sqrt(log N / t) / (G D)); the grid cannot grow with the rounds,
so its default depth is fixed (10 levels in one dimension, 7 in two) and the discretisation
term T G h sqrt(d) / 2 grows linearly once T passes about 4^levels: give ``levels`` for longer
streams.

We use the grid's exact sum_x ||x - p(x)||^2 and depth, not the proof's bounds, which slip:
in one dimension the point x = D has p(x) = 0 at distance D, so the sum is
D^2 (1 + (1 - 2^-k) / 2) -> 1.5 D^2, not at most D^2; in two dimensions the chains have up to
k + 1 links ((D, D/2) -> (D, 0) -> 0 at k = 1), not k, and the sum exceeds 2 (k + 1) D^2 at
k = 1 (5.5 D^2). Both change constants only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

import numpy as np

from dponline.domains.simplex import Simplex
from dponline.online.ftrl import ANYTIME_OPTION, DPFTRL, EntropicRegulariser, horizon_of
from dponline.privacy.arguments import (
    ArgumentError,
    checked_generator,
    checked_positive,
    checked_real_array,
    saved_field,
)
from dponline.privacy.bounds import NormBall
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import FeedbackKind, LossFunctionFeedback, LossVectorFeedback, checked_count
from dponline.registry import (
    AuditCase,
    LearnerEntry,
    LearnerTestCase,
    non_private_entry,
    register_learner,
)
from dponline.rng import RngLike, as_generator, generator_state

__all__ = ["DyadicGrid", "DyadicHedge", "online_to_batch"]


def _trailing_zeros(t: np.ndarray, cap: int) -> np.ndarray:
    """The 2-adic valuation of each entry (``cap`` for 0)."""
    out = np.full(t.shape, cap, dtype=np.int64)
    nz = t > 0
    low = t[nz] & -t[nz]  # lowest set bit
    out[nz] = np.log2(low).round().astype(np.int64)
    return out


class DyadicGrid:
    """The grid of Theorem 14's proof: coordinates lo + (j / 2^k)(hi - lo), j = 0..2^k, in one
    or two dimensions, with the parent map p, the transform M and its pseudo-inverse M-dagger.

    Points are indexed flat (row-major in two dimensions); ``points`` has shape (n, dim).
    p(0) = 0; otherwise, with b the largest integer such that every index j_i is a multiple of
    2^b, p clears bit b of each index that has it (a_i odd in the paper's x = a D / 2^{k-b}
    notation becomes a_i - 1), so the level of p(x) is strictly below x's.
    """

    def __init__(self, dim: int, levels: int, lo: Any = 0.0, hi: Any = 1.0) -> None:
        self.dim = checked_count("dim", dim)
        if self.dim not in (1, 2):
            raise ValueError(f"the dyadic grid of Theorem 14 is for 1 or 2 dimensions, got {dim}")
        self.levels = checked_count("levels", levels)
        if self.levels > 24:
            raise ValueError(
                f"levels must be at most 24 (2^levels + 1 points a side), got {levels}"
            )
        self.lo = np.broadcast_to(np.asarray(lo, dtype=float), (self.dim,)).copy()
        self.hi = np.broadcast_to(np.asarray(hi, dtype=float), (self.dim,)).copy()
        if not np.all(np.isfinite(self.lo) & np.isfinite(self.hi) & (self.hi > self.lo)):
            raise ValueError(f"need finite lo < hi, got lo = {self.lo}, hi = {self.hi}")
        side = 2**self.levels + 1
        j = np.arange(side, dtype=np.int64)
        idx = j[:, None] if self.dim == 1 else np.stack(np.meshgrid(j, j, indexing="ij"), -1)
        idx = idx.reshape(-1, self.dim)
        self.indices = idx
        self.points = self.lo + idx / 2.0**self.levels * (self.hi - self.lo)
        tz = _trailing_zeros(idx, self.levels + 1).min(axis=1)  # b, (k+1) at the origin
        bit = np.where(tz <= self.levels, np.left_shift(1, np.minimum(tz, self.levels)), 0)
        parent_idx = idx - (idx & bit[:, None])
        weights = side ** np.arange(self.dim - 1, -1, -1)
        self.parent = parent_idx @ weights
        depth = np.zeros(len(idx), dtype=np.int64)
        order = np.argsort(-tz, kind="stable")  # coarse levels first: parents before children
        for i in order:
            if self.parent[i] != i:
                depth[i] = depth[self.parent[i]] + 1
        self.depth = depth
        self._by_depth = [np.flatnonzero(depth == d) for d in range(1, int(depth.max()) + 1)]

    @property
    def size(self) -> int:
        return len(self.points)

    def transform(self, values: np.ndarray) -> np.ndarray:
        """M l: (M l)(x) = l(x) - l(p(x)), over the last axis."""
        values = np.asarray(values, dtype=float)
        return values - values[..., self.parent]

    def inverse(self, transformed: np.ndarray) -> np.ndarray:
        """M-dagger l' (Eq. 4.1): l(x) = sum of l' along the chain x, p(x), ... before the
        origin, so that M-dagger M l = l - l(0)."""
        transformed = np.asarray(transformed, dtype=float)
        out = np.zeros_like(transformed)
        for nodes in self._by_depth:
            out[..., nodes] = transformed[..., nodes] + out[..., self.parent[nodes]]
        return out

    def parent_distance_sq(self) -> float:
        """sum_x ||x - p(x)||^2 (Eq. 4.2: at most D^2 in one dimension, 2 (k + 1) D^2 in two,
        for the cube of side D)."""
        diff = self.points - self.points[self.parent]
        return float((diff * diff).sum())

    def transform_radius(self, lipschitz: float) -> float:
        """G sqrt(sum_x ||x - p(x)||^2): ||M l||_2 for every G-Lipschitz l (Eq. 4.2)."""
        return float(lipschitz) * math.sqrt(self.parent_distance_sq())

    def inverse_norm(self) -> float:
        """||M-dagger||_{2 -> inf} = sqrt(max depth) (Eq. 4.3): each row of M-dagger is the
        indicator of a chain."""
        return math.sqrt(int(self.depth.max()))

    def spacing(self) -> float:
        """The grid's largest step, max_i (hi_i - lo_i) / 2^k."""
        return float((self.hi - self.lo).max()) / 2.0**self.levels


class DyadicHedge(DPFTRL):
    """Theorem 14's algorithm: private Hedge (Agarwal & Singh 2017, Algorithm 1, via
    :class:`~dponline.online.ftrl.DPFTRL`) on the transformed losses M l_t of a
    :class:`DyadicGrid`, M-dagger applied to the counter's noisy sums, and a grid point drawn
    from the weights each round.

    Parameters
    ----------
    lo, hi:
        The box K = [lo, hi] in R^1 or R^2 (a shape-(dim,) pair; ``dim`` from their length).
    horizon:
        T; ``None`` for the anytime learner (module docstring).
    lipschitz:
        G: every loss must be G-Lipschitz in the l2 norm on K (its transform is checked against
        the counter's ball, which is what the guarantee needs).
    budget:
        The :class:`~dponline.privacy.budget.PrivacyBudget` (Gaussian noise, delta > 0), or None
        for the non-private Hedge on the grid.
    levels:
        k, the grid has 2^k + 1 points a side (default ceil(log2 T), the paper's, in one
        dimension; min(ceil(log2 T), 7) in two, where the paper's (2T + 1)^2 experts are out of
        reach: a coarser grid costs at most T G h sqrt(d) / 2 of regret, h the step); without a
        horizon 10 in one dimension and 7 in two.
    eta:
        Hedge's rate (default sqrt(log N / T) / (G D), N grid points, D the box's diameter;
        without a horizon the anytime rate sqrt(log N / t) / (G D) of round t).
    mechanism:
        The continual counter (default: ``padded_tree`` for paper; for tight the
        lowest-variance one whose noise state for one run fits 64 MiB, the rescaled square root
        or else a BLT, :func:`~dponline.continual.selection.best_mechanism`, as for
        :class:`~dponline.online.ftrl.DPFTRL`).
    """

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.LOSS_FUNCTION
    paper: ClassVar[str] = "Agarwal, Kale, Singh & Thakurta (2023), Theorem 14"

    def __init__(
        self,
        lo: Any,
        hi: Any,
        horizon: int | None,
        *,
        lipschitz: float,
        budget: PrivacyBudget | None,
        levels: int | None = None,
        eta: float | None = None,
        mechanism: str | None = None,
        replicas: int = 1,
        rng: RngLike = None,
    ) -> None:
        lo = np.atleast_1d(np.asarray(lo, dtype=float))
        if horizon is not None:
            horizon = checked_count("horizon", horizon)
        g = checked_positive("lipschitz", lipschitz)
        if levels is None and horizon is None:
            levels = 10 if len(lo) == 1 else 7
        elif levels is None:
            levels = max(1, math.ceil(math.log2(horizon)))
            if len(lo) == 2:
                levels = min(levels, 7)
        self.grid = DyadicGrid(len(lo), levels, lo, hi)
        self.lipschitz = g
        n = self.grid.size
        diameter = float(np.linalg.norm(self.grid.hi - self.grid.lo))
        if eta is None and horizon is not None:
            eta = math.sqrt(math.log(n) / horizon) / (g * diameter)
        gen = as_generator(rng)
        self._sampler = np.random.default_rng(gen.integers(2**63))
        self._held: np.ndarray | None = None  # the grid points drawn this round, until observed
        super().__init__(
            n,
            horizon,
            budget=budget,
            noise="gaussian",
            mechanism=mechanism,
            domain=Simplex(n),
            regulariser=EntropicRegulariser(),
            loss_bounds=NormBall(self.grid.transform_radius(g), 2, n),
            eta=eta,
            eta_constant=(
                math.sqrt(math.log(n)) / (g * diameter) if horizon is None and eta is None else None
            ),
            replicas=replicas,
            rng=gen,
        )
        self.box_dim = self.grid.dim

    def weights(self) -> np.ndarray:
        """Hedge's weights over the grid, (replicas, N): softmax(-eta M-dagger L~_{t-1})."""
        return self.regulariser.argmin(self.domain, self.eta, self.grid.inverse(self._cumulative))

    def _decide(self, cumulative: np.ndarray) -> np.ndarray:
        """A grid point per row of the noisy sums ``cumulative``, drawn from Hedge's weights."""
        w = self.regulariser.argmin(self.domain, self.eta, self.grid.inverse(cumulative))
        cdf = np.cumsum(w, axis=1)
        u = self._sampler.random((len(w), 1)) * cdf[:, -1:]
        pick = np.minimum((cdf < u).sum(axis=1), w.shape[1] - 1)
        return self.grid.points[pick]

    def _decision_config(self) -> dict[str, Any]:
        """DP-FTRL's, with the grid (its box and levels) and the Lipschitz bound."""
        return {
            **super()._decision_config(),
            "grid": [self.grid.lo.tolist(), self.grid.hi.tolist(), self.grid.levels],
            "lipschitz": self.lipschitz,
        }

    def act(self) -> np.ndarray:
        """This round's grid points, drawn from Hedge's weights once a round: asked again
        before :meth:`observe`, the points already drawn (the loss is charged to the point
        played, and no draw is spent on a point nobody played)."""
        if not self._acted or self._held is None:
            self._held = self._decide(self._cumulative)
        self._acted = True
        return self._held.copy()

    def play_block(self, losses: np.ndarray) -> np.ndarray:
        """Refused: the dyadic Hedge observes loss functions (evaluated on its grid and
        transformed), one round at a time."""
        raise TypeError(
            "DyadicHedge observes loss functions one round at a time (act, then observe a "
            "LossFunctionFeedback); it does not play blocks of loss vectors"
        )

    def observe(self, feedback: Any) -> None:
        """l_t on the grid, checked G-Lipschitz through its transform, fed as M l_t."""
        if not isinstance(feedback, LossFunctionFeedback):
            raise TypeError(
                f"DyadicHedge observes LossFunctionFeedback, got {type(feedback).__name__}"
            )
        if not callable(feedback.loss):
            raise TypeError(
                "DyadicHedge observes LossFunctionFeedback carrying the loss, a function it "
                f"evaluates on the grid; got the loss {feedback.loss!r:.80}"
            )
        self._check_round()
        loss = feedback.loss
        dim = getattr(loss, "dim", self.grid.dim)
        if dim != self.grid.dim:
            raise ValueError(
                f"a loss on points of shape ({dim},), the learner plays ({self.grid.dim},)"
            )
        declared = getattr(loss, "lipschitz", None)
        if declared is not None and declared > self.lipschitz * (1 + 1e-9):
            raise ValueError(
                f"round {self.t + 1}: the loss declares Lipschitz constant {declared:.6g}, above "
                f"the learner's bound G = {self.lipschitz:.6g}"
            )
        values = checked_real_array(
            f"the loss's values at the {self.grid.size} grid points",
            loss(self.grid.points),
            (self.grid.size,),
            finite=False,  # refused below, naming the grid point
        )
        if not np.all(np.isfinite(values)):
            i = int(np.argmin(np.isfinite(values)))
            raise ValueError(
                f"round {self.t + 1}: the loss is {values[i]} at the grid point "
                f"{self.grid.points[i].tolist()}"
            )
        transformed = self.grid.transform(values)
        norm = float(np.linalg.norm(transformed))
        radius = self.grid.transform_radius(self.lipschitz)
        if norm > radius * (1 + 1e-9):
            raise ValueError(
                f"round {self.t + 1}: ||M l|| = {norm:.6g} exceeds G sqrt(sum ||x - p(x)||^2) = "
                f"{radius:.6g}: the loss is not {self.lipschitz:g}-Lipschitz on the grid"
            )
        super().observe(LossVectorFeedback(transformed))
        self._held = None

    def regret_bound(
        self,
        losses: np.ndarray | Iterable[np.ndarray],
        *,
        samples: int = 2_000,
        seed: int = 0,
    ) -> dict:
        """The explicit bound behind Theorem 14 for ``losses`` (T, N) on the grid: Hedge's
        log N / eta + 2 eta sum_t max_x (l_t(x) - l_t(0))^2 (the FTRL bound of Theorem 15), plus
        the noise term E[max_x Z(x) - min_x Z(x)] with Z = M-dagger of one release's noise
        (Lemma 16; estimated from ``samples`` draws, padded tree only, as Theorem 15 assumes
        identically distributed releases), plus the discretisation T G h sqrt(d) / 2.
        ``losses`` may also be an iterable of row blocks (rounds in order), for long streams."""
        if self.horizon is None:
            raise ValueError(
                "regret_bound evaluates the fixed-horizon bound (one rate, the padded tree); "
                "this DyadicHedge was built without a horizon"
            )
        blocks = [losses] if isinstance(losses, np.ndarray) else losses
        stability, rounds = 0.0, 0
        for block in blocks:
            b = np.asarray(block, dtype=float)
            stability += float((np.abs(b - b[:, :1]).max(axis=1) ** 2).sum())
            rounds += len(b)
        n = self.grid.size
        noise_term = 0.0
        if self.budget is not None:
            if self.counter.name != "padded_tree":
                raise ValueError(
                    "the bound assumes Algorithm 2's identically distributed noise: build the "
                    f"learner with mechanism='padded_tree' (this one uses {self.counter.name!r})"
                )
            gen = np.random.default_rng(seed)
            ranges = []
            for start in range(0, samples, 250):
                k = min(250, samples - start)
                z = self.counter.noise.sample_sum(gen, self.counter.draws, (k, n))
                zz = self.grid.inverse(z)
                ranges.append(zz.max(axis=1) - zz.min(axis=1))
            noise_term = float(np.concatenate(ranges).mean())
        disc = rounds * self.lipschitz * self.grid.spacing() * math.sqrt(self.grid.dim) / 2
        hedge = math.log(n) / self.eta + 2.0 * self.eta * stability
        return {
            "explicit": hedge + noise_term + disc,
            "hedge": hedge,
            "noise_term": noise_term,
            "discretisation": disc,
        }

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["sampler"] = generator_state(self._sampler)
        state["held"] = None if self._held is None else self._held.copy()
        return state

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        install_hedge = super().prepare_load(state)
        sampler = checked_generator("saved sampler", saved_field(state, "sampler"))
        _, acted = self._checked_rounds(state)
        saved = saved_field(state, "held")
        held = None
        if saved is not None or acted:  # the points of a round acted in: one of the grid's
            if saved is None:
                raise ArgumentError("saved state has acted in its round but holds no points")
            held = np.array(
                checked_real_array("saved held points", saved, (self.replicas, self.grid.dim))
            )
            if not acted or not (held[:, None, :] == self.grid.points[None]).all(-1).any(-1).all():
                raise ArgumentError(
                    "saved held points must be grid points of a round acted in, not observed"
                )

        def install() -> None:
            install_hedge()
            self._sampler = sampler
            self._held = held

        return install


def online_to_batch(learner: DyadicHedge, losses: Any, rng: RngLike = None) -> np.ndarray:
    """DP stochastic optimisation in 1-2D by online-to-batch conversion (Cesa-Bianchi et al.
    2001; Section 1 of 003): run ``learner`` once over the i.i.d. sample losses (an iterable of
    functions on points) and return, per replica, the iterate of a uniformly random round: its
    expected excess population risk is at most the expected regret / T. Each sample is one
    round's loss, so neighbouring datasets are neighbouring loss sequences and the output is
    post-processing of the private decisions: the learner's guarantee holds for it."""
    gen = as_generator(rng)
    iterates = []
    for loss in losses:
        iterates.append(learner.act())
        learner.observe(LossFunctionFeedback(loss, None, loss))
    if not iterates:
        raise ValueError("online_to_batch needs at least one sample")
    stacked = np.stack(iterates, axis=1)  # (replicas, T, dim)
    pick = gen.integers(len(iterates), size=len(stacked))
    return stacked[np.arange(len(stacked)), pick]


# --- catalogue entries (dponline.registry) ----------------------------------------------------


def _dyadic_hedge(
    env: Any, *, budget: PrivacyBudget | None, anytime: bool = False, **kw: Any
) -> DyadicHedge:
    """Theorem 14's learner on ``env``'s box, horizon and Lipschitz constant (Gaussian noise,
    delta 1e-6 by default); ``anytime=True`` builds it without a horizon."""
    if budget is not None:
        budget.require_delta("dp-dyadic-hedge (Gaussian noise)")
    horizon = horizon_of(env, anytime)
    return DyadicHedge(env.lo, env.hi, horizon, lipschitz=env.lipschitz, budget=budget, **kw)


def _dyadic_audit(environment_options: dict[str, Any], levels: int, eta: float) -> AuditCase:
    """Round 1's loss is the distance to the box's corner lo or hi; a coarse grid and a large
    rate so that one round moves the weights visibly. In one dimension the two losses differ by
    a linear function whose transform fills the counter's ball (the worst case); in two, the
    parent steps x - p(x) point in three directions and no Lipschitz function's transform
    reaches the ball's radius (the corner pair reaches 0.85 of it, as does the best linear
    function). The two-dimensional audit uses one level (a 3 x 3 grid): the learner plays one
    grid point a round, and on the 5 x 5 grid of two levels that choice hides too much of the
    noisy sums for 20,000 runs to refute a tenth of the noise (lower bound 0.84, measured)."""
    return AuditCase(
        horizon=4,
        values=(0.0, 1.0),
        rest=0.5,
        environment_options=environment_options,
        learner_options={"levels": levels, "eta": eta},
        trials=20_000,
        pilot_trials=5_000,
        seed=7,
    )


_DYADIC_OPTIONS = {
    "delta": "the budget's delta (default 1e-6)",
    "levels": "k: 2^k + 1 grid points a side (default ceil(log2 T); at most 7 in 2D)",
    "eta": "Hedge's rate (default sqrt(log N / T) / (G D))",
    "mechanism": "continual counter (default: padded_tree for paper; for tight the "
    "lowest-variance one whose noise fits 64 MiB)",
    "anytime": ANYTIME_OPTION,
}

_DYADIC_ENTRY = register_learner(
    LearnerEntry(
        "dp-dyadic-hedge",
        _dyadic_hedge,
        paper="Agarwal, Kale, Singh & Thakurta (2023), Theorem 14: private Hedge on the "
        "dyadic grid's transformed losses (Lemma 16)",
        setting="online Lipschitz (non-convex) optimisation on a box in 1 or 2 dimensions",
        guarantee="event-level (epsilon, delta)-DP over loss sequences differing in one round, "
        "for G-Lipschitz losses (their transform in the counter's l2 ball, checked)",
        calibrations=("paper", "tight"),
        private=True,
        feedback_kind=FeedbackKind.LOSS_FUNCTION,
        action_space="box (1-2D)",
        test_cases=(
            LearnerTestCase(
                "lipschitz_low_dim",
                learner_options={"levels": 4},
                audit=_dyadic_audit({"dim": 1}, levels=2, eta=5.0),
            ),
            LearnerTestCase(
                "lipschitz_low_dim",
                environment_options={"dim": 2},
                learner_options={"levels": 3},
                label="2d",
                audit=_dyadic_audit({"dim": 2}, levels=1, eta=20.0),
            ),
        ),
        options=_DYADIC_OPTIONS,
        default_delta=1e-6,
        anytime=True,
        person_level=True,
        clips=False,
    )
)

register_learner(
    non_private_entry(
        _DYADIC_ENTRY,
        "dyadic-hedge",
        paper="Hedge on the dyadic grid of Theorem 14 (exact sums); the non-private "
        "counterpart of dp-dyadic-hedge",
        test_cases=(
            LearnerTestCase("lipschitz_low_dim", learner_options={"levels": 4}, randomised=True),
            LearnerTestCase(
                "stock_portfolio_low_dim",
                environment_options={"dim": 2},
                randomised=True,
                label="stocks 2d",
            ),
        ),
        options={k: v for k, v in _DYADIC_OPTIONS.items() if k in ("levels", "eta", "anytime")},
    )
)
