"""Empirical privacy audit: a statistical test that can refute a privacy claim.

Given a way to run a mechanism many times on a dataset (``sampler(data, n, rng) -> outputs``
with outputs of shape ``(n, ...)``), two neighbouring datasets and a scalar statistic of the
output, the audit

1. runs ``pilot_trials`` on each dataset and picks an event E = {statistic >= tau} (or <=) and
   an order of the two datasets that maximise the empirical privacy loss (when no statistic is
   given, the statistic is Fisher's linear discriminant fitted on the pilot runs);
2. runs ``trials`` fresh runs on each dataset and counts how often E happens, k_a and k_b;
3. bounds both probabilities with one-sided Clopper-Pearson intervals at alpha/2 each and
   returns the lower bound

       epsilon_lb = log((p_a_lower - delta) / p_b_upper).

Any (epsilon, delta)-DP mechanism has P_a(E) <= e^epsilon P_b(E) + delta for every event, so
with probability at least 1 - alpha, ``epsilon_lb <= epsilon``: a correct claim is refuted
(``epsilon_lb > epsilon``) with probability at most ``alpha``. The event is chosen on pilot
runs that are not reused, so the choice does not bias the final interval.

A claim that also states rho-zCDP (``PrivacyGuarantee.rho``, the Gaussian mechanisms) is tested
a second time, on the same runs, against rho (:func:`rho_lower_bound`): a rho-zCDP mechanism
has D_alpha(M(a) || M(b)) <= rho alpha at every order alpha > 1, and by data processing so has
the indicator of any event, a pair of Bernoulli laws. At the small noise-to-signal ratios of
Gaussian learners calibrated to delta <= 1e-5 the (epsilon, delta) test needs events of
probability near delta to see anything, which tens of thousands of runs cannot estimate; the
Renyi test reads events near probability 1/2, so it sees a factor-2 noise bug that the
epsilon test misses. Each of the two tests refutes a correct claim with probability at most
``alpha`` (both together at most ``2 alpha``).

Samplers: :func:`counter_sampler` runs a continual counter over a stream; :func:`learner_sampler`
runs any learner (built by a factory, fed by a caller-supplied ``run``) over a whole input
stream, so this module knows nothing of counters or learners.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

from dponline.privacy.arguments import checked_count
from dponline.privacy.guarantee import PrivacyGuarantee
from dponline.rng import RngLike, as_generator

__all__ = [
    "RHO_ORDERS",
    "AuditResult",
    "RhoAudit",
    "Sampler",
    "audit",
    "bernoulli_renyi",
    "clopper_pearson",
    "counter_sampler",
    "epsilon_lower_bound",
    "fisher_statistic",
    "learner_sampler",
    "rho_lower_bound",
]

Sampler = Callable[[np.ndarray, int, np.random.Generator], np.ndarray]
Statistic = Callable[[np.ndarray], np.ndarray]


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """One-sided Clopper-Pearson bounds (lower at level alpha, upper at level alpha)."""
    if not 0 <= k <= n or n < 1:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - alpha, k + 1, n - k))
    return lo, hi


def epsilon_lower_bound(
    k_a: int, n_a: int, k_b: int, n_b: int, delta: float, alpha: float
) -> float:
    """log((p_a_lower - delta) / p_b_upper), with each bound at level alpha/2 (0 if vacuous)."""
    p_a_lo, _ = clopper_pearson(k_a, n_a, alpha / 2)
    _, p_b_hi = clopper_pearson(k_b, n_b, alpha / 2)
    if p_a_lo <= delta:
        return 0.0
    return max(0.0, math.log((p_a_lo - delta) / p_b_hi))


#: Renyi orders at which :func:`rho_lower_bound` reads D_alpha / alpha. Every order gives a
#: valid lower bound on rho, so the grid only decides how close to the best order it gets
#: (1.001 to 1001: the best order of the events an audit counts lies near 1 for probabilities
#: near 1/2 and grows as they separate).
RHO_ORDERS = 1.0 + np.geomspace(1e-3, 1e3, 121)


def bernoulli_renyi(
    p: np.ndarray | float, q: np.ndarray | float, order: np.ndarray | float
) -> np.ndarray:
    """The Renyi divergence D_order(Bern(p) || Bern(q)) for 0 < p, q < 1 and order > 1
    (arrays broadcast), in nats:

        log(p^a q^(1 - a) + (1 - p)^a (1 - q)^(1 - a)) / (a - 1),   a = order,

    summed in the log domain (finite and exact to rounding for orders up to 1e3 and
    probabilities down to the smallest a Clopper-Pearson bound returns)."""
    p, q, a = np.asarray(p, float), np.asarray(q, float), np.asarray(order, float)
    one = a * np.log(p) + (1.0 - a) * np.log(q)
    zero = a * np.log1p(-p) + (1.0 - a) * np.log1p(-q)
    return np.logaddexp(one, zero) / (a - 1.0)


def _rho_of_probabilities(p_a_lo: np.ndarray, p_b_hi: np.ndarray) -> np.ndarray:
    """max over RHO_ORDERS of max(D_a(P || Q), D_a(Q || P)) / a for P = Bern(p_a_lo), Q =
    Bern(p_b_hi), where p_a_lo > p_b_hi; 0 elsewhere (arrays of equal shape)."""
    p_a_lo, p_b_hi = np.asarray(p_a_lo, float), np.asarray(p_b_hi, float)
    sep = p_a_lo > p_b_hi
    out = np.zeros(p_a_lo.shape)
    if not np.any(sep):
        return out
    p, q = p_a_lo[sep][:, None], p_b_hi[sep][:, None]
    a = RHO_ORDERS[None, :]
    d = np.maximum(bernoulli_renyi(p, q, a), bernoulli_renyi(q, p, a)) / a
    out[sep] = np.maximum(0.0, d.max(axis=1))
    return out


def rho_lower_bound(k_a: int, n_a: int, k_b: int, n_b: int, alpha: float) -> float:
    """A lower confidence bound (level 1 - alpha) on the rho of any rho-zCDP mechanism under
    which an event happened k_a times in n_a runs on one input and k_b times in n_b on its
    neighbour: with p_lo the Clopper-Pearson lower bound on P_a(E) and q_hi the upper bound on
    P_b(E), each at level alpha/2,

        rho_lb = max over alpha in RHO_ORDERS of max(D_alpha(Bern(p_lo) || Bern(q_hi)),
                                                     D_alpha(Bern(q_hi) || Bern(p_lo))) / alpha

    (0 when p_lo <= q_hi).

    Proof. With probability at least 1 - alpha, p = P_a(E) >= p_lo and q = P_b(E) <= q_hi,
    so p >= p_lo > q_hi >= q. The binary channel that sends 1 to 1 with probability c + s and
    0 to 1 with probability c, where s = (p_lo - q_hi) / (p - q) in (0, 1] and c = q_hi - s q,
    maps Bern(p) to Bern(p_lo) and Bern(q) to Bern(q_hi). It is a channel: c >= 0 because
    q_hi (p - q) - q (p_lo - q_hi) = q_hi p - q p_lo >= 0, and c + s <= 1 because
    (1 - q_hi)(p - q) - (1 - q)(p_lo - q_hi) = (1 - q_hi)(p - p_lo) + (q_hi - q)(1 - p_lo)
    >= 0. By data processing, in either direction, the divergence at (p_lo, q_hi) is at most
    the one at (p, q); that is at most the divergence between the mechanism's outputs on the
    two inputs (the indicator of E is post-processing), which rho-zCDP bounds by rho alpha at
    every order alpha > 1, in both directions since neighbouring is symmetric. Every order
    gives a valid bound, so the maximum over a finite grid does too.
    """
    p_a_lo, _ = clopper_pearson(k_a, n_a, alpha / 2)
    _, p_b_hi = clopper_pearson(k_b, n_b, alpha / 2)
    return float(_rho_of_probabilities(np.array([p_a_lo]), np.array([p_b_hi]))[0])


@dataclass(frozen=True)
class RhoAudit:
    """The test of a claim's rho-zCDP (:func:`rho_lower_bound`), on the runs of the epsilon
    test with an event of its own chosen on the same pilot runs."""

    rho_lower: float  #: lower confidence bound on the mechanism's rho
    claimed_rho: float
    refuted: bool  #: ``rho_lower > claimed_rho``
    counts: tuple[int, int, int, int]  #: (k_a, n_a, k_b, n_b) for the ordered pair
    threshold: float
    event: str  #: the event counted, as the pilot chose it
    pilot_rho: float  #: the chosen event's bound on the pilot runs

    def __str__(self) -> str:
        verdict = "REFUTED" if self.refuted else "not refuted"
        return (
            f"rho >= {self.rho_lower:.4g} (claim {self.claimed_rho:.4g}: {verdict}); "
            f"event {self.event}; counts {self.counts}"
        )


@dataclass(frozen=True)
class AuditResult:
    """The outcome of :func:`audit`."""

    epsilon_lower: float  #: lower confidence bound on the mechanism's epsilon at ``delta``
    claimed_epsilon: float
    delta: float
    alpha: float  #: chance of refuting a correct claim
    refuted: bool  #: ``epsilon_lower > claimed_epsilon``
    counts: tuple[int, int, int, int]  #: (k_a, n_a, k_b, n_b) for the ordered pair
    threshold: float
    #: the event counted, as the pilot chose it, e.g. "statistic >= 1.3, chosen on the pilot as
    #: more likely on input B" (the final counts may disagree: they are fresh runs)
    event: str
    pilot_epsilon: float  #: the empirical loss of the chosen event on the pilot runs
    #: the test of the claim's rho (:class:`RhoAudit`), when the claim states one
    rho: RhoAudit | None = None

    @property
    def any_refuted(self) -> bool:
        """True when the epsilon claim or the rho claim is refuted (a correct guarantee that
        states both is refuted with probability at most ``2 alpha``)."""
        return self.refuted or (self.rho is not None and self.rho.refuted)

    def __str__(self) -> str:
        verdict = "REFUTED" if self.refuted else "not refuted"
        text = (
            f"audit: epsilon >= {self.epsilon_lower:.3f} with confidence {1 - self.alpha:g} "
            f"(claim {self.claimed_epsilon:.4g} at delta {self.delta:.3g}: {verdict}); "
            f"event {self.event}; counts {self.counts}"
        )
        return text if self.rho is None else f"{text}; {self.rho}"


def fisher_statistic(out_a: np.ndarray, out_b: np.ndarray, ridge: float = 1e-6) -> Statistic:
    """Fisher's linear discriminant between two samples of outputs (flattened)."""
    xa = out_a.reshape(len(out_a), -1)
    xb = out_b.reshape(len(out_b), -1)
    diff = xb.mean(axis=0) - xa.mean(axis=0)
    pooled = np.atleast_2d(np.cov(np.vstack([xa - xa.mean(0), xb - xb.mean(0)]), rowvar=False))
    # the ridge is relative to the trace, plus a tiny absolute one: outputs that never vary
    # (a deterministic release) give a zero covariance, and then the direction of the means
    pooled = pooled + (ridge * np.trace(pooled) / len(pooled) + 1e-12) * np.eye(len(pooled))
    w = np.linalg.solve(pooled, diff)

    def stat(out: np.ndarray) -> np.ndarray:
        return out.reshape(len(out), -1) @ w

    return stat


def _clopper_pearson_pairs(
    k_a: np.ndarray, n_a: int, k_b: np.ndarray, n_b: int, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """The lower bound on P_a(E) and the upper bound on P_b(E) of :func:`clopper_pearson`, each
    at level alpha/2, for arrays of counts at once."""
    k_a, k_b = np.asarray(k_a), np.asarray(k_b)
    with np.errstate(invalid="ignore"):
        a_lo = stats.beta.ppf(alpha / 2, k_a, n_a - k_a + 1)
        b_hi = stats.beta.ppf(1 - alpha / 2, k_b + 1, n_b - k_b)
    return np.where(k_a == 0, 0.0, a_lo), np.where(k_b == n_b, 1.0, b_hi)


def _epsilon_lower_bounds(
    k_a: np.ndarray, n_a: int, k_b: np.ndarray, n_b: int, delta: float, alpha: float
) -> np.ndarray:
    """:func:`epsilon_lower_bound` for arrays of counts at once (same values, elementwise)."""
    p_a_lo, p_b_hi = _clopper_pearson_pairs(k_a, n_a, k_b, n_b, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.log((p_a_lo - delta) / p_b_hi)
    return np.where(p_a_lo <= delta, 0.0, np.maximum(0.0, eps))


def _rho_lower_bounds(
    k_a: np.ndarray, n_a: int, k_b: np.ndarray, n_b: int, alpha: float
) -> np.ndarray:
    """:func:`rho_lower_bound` for arrays of counts at once (same values, elementwise)."""
    return _rho_of_probabilities(*_clopper_pearson_pairs(k_a, n_a, k_b, n_b, alpha))


#: a lower bound on a claim's parameter from event counts: (k_a, n_a, k_b, n_b) -> bounds
_Bound = Callable[[np.ndarray, int, np.ndarray, int], np.ndarray]


def _best_event(s_a: np.ndarray, s_b: np.ndarray, bound: _Bound):  # type: ignore[no-untyped-def]
    """Pick (threshold, direction, order) maximising the pilot's lower bound ``bound``: the
    first best of thresholds (400 quantiles of the pooled scores) x directions x orders."""
    n = len(s_a)
    taus = np.unique(np.quantile(np.concatenate([s_a, s_b]), np.linspace(0.0005, 0.9995, 400)))
    sa, sb = np.sort(s_a), np.sort(s_b)
    # counts of {statistic >= tau} (sign 1) and {statistic <= tau} (sign -1)
    counts = {
        1: (n - np.searchsorted(sa, taus, "left"), n - np.searchsorted(sb, taus, "left")),
        -1: (np.searchsorted(sa, taus, "right"), np.searchsorted(sb, taus, "right")),
    }
    # candidate order as in a loop over tau, then sign (1, -1), then swap (False, True)
    lower = np.empty((len(taus), 2, 2))
    for j, sign in enumerate((1, -1)):
        ka, kb = counts[sign]
        lower[:, j, 0] = bound(ka, n, kb, n)
        lower[:, j, 1] = bound(kb, n, ka, n)
    i, j, k = np.unravel_index(int(np.argmax(lower)), lower.shape)
    return float(lower[i, j, k]), float(taus[i]), (1, -1)[j], bool(k)


def _count_event(
    s_a: np.ndarray,
    s_b: np.ndarray,
    trials: int,
    pilot_bound: float,
    tau: float,
    sign: int,
    swap: bool,
) -> tuple[tuple[int, int, int, int], str]:
    """The fresh runs' counts (k1, n, k2, n) of the event the pilot chose, ordered as chosen,
    and the event described."""
    ka = int(np.sum(sign * s_a >= sign * tau))
    kb = int(np.sum(sign * s_b >= sign * tau))
    k1, k2 = (kb, ka) if swap else (ka, kb)
    op = ">=" if sign == 1 else "<="
    if pilot_bound > 0:
        event = f"statistic {op} {tau:.4g}, chosen on the pilot as more likely on input " + (
            "B" if swap else "A"
        )
    else:  # no event separated the pilot's inputs: the first candidate, as good as any
        event = f"statistic {op} {tau:.4g} (the pilot found no event more likely on one input)"
    return (k1, trials, k2, trials), event


def audit(
    sampler: Sampler,
    data_a: np.ndarray,
    data_b: np.ndarray,
    *,
    claim: PrivacyGuarantee | tuple[float, float],
    statistic: Statistic | None = None,
    trials: int = 20_000,
    pilot_trials: int = 5_000,
    alpha: float = 1e-3,
    rng: RngLike = None,
) -> AuditResult:
    """Audit a mechanism's claim on two neighbouring inputs (see the module docstring).

    Parameters
    ----------
    sampler:
        ``sampler(data, n, rng)`` returns ``n`` independent outputs on ``data``, shape (n, ...).
    claim:
        The guarantee to test, or ``(epsilon, delta)``.
    statistic:
        Maps outputs (n, ...) to scores (n,); Fisher's discriminant from the pilot when omitted.
    alpha:
        The probability of refuting a correct claim.
    """
    eps, delta = (claim.epsilon, claim.delta) if isinstance(claim, PrivacyGuarantee) else claim
    if not 0.0 < float(alpha) < 1.0:
        raise ValueError(
            f"alpha (the chance of refuting a correct claim) must lie in (0, 1), got {alpha!r}"
        )
    if trials < 1 or pilot_trials < 10:
        raise ValueError(f"need trials >= 1 and pilot_trials >= 10, got {trials}, {pilot_trials}")
    rho = claim.rho if isinstance(claim, PrivacyGuarantee) else None
    gen = as_generator(rng)
    pa = np.asarray(sampler(np.asarray(data_a), pilot_trials, gen))
    pb = np.asarray(sampler(np.asarray(data_b), pilot_trials, gen))
    stat = statistic if statistic is not None else fisher_statistic(pa, pb)
    pilot_a, pilot_b = stat(pa), stat(pb)
    pilot_eps, tau, sign, swap = _best_event(
        pilot_a, pilot_b, lambda ka, na, kb, nb: _epsilon_lower_bounds(ka, na, kb, nb, delta, alpha)
    )
    s_a = stat(np.asarray(sampler(np.asarray(data_a), trials, gen)))
    s_b = stat(np.asarray(sampler(np.asarray(data_b), trials, gen)))
    counts, event = _count_event(s_a, s_b, trials, pilot_eps, tau, sign, swap)
    lb = epsilon_lower_bound(*counts, delta, alpha)
    rho_audit = None
    if rho is not None:
        pilot_rho, r_tau, r_sign, r_swap = _best_event(
            pilot_a, pilot_b, lambda ka, na, kb, nb: _rho_lower_bounds(ka, na, kb, nb, alpha)
        )
        r_counts, r_event = _count_event(s_a, s_b, trials, pilot_rho, r_tau, r_sign, r_swap)
        rho_lb = rho_lower_bound(*r_counts, alpha)
        rho_audit = RhoAudit(
            rho_lower=rho_lb,
            claimed_rho=float(rho),
            refuted=rho_lb > rho,
            counts=r_counts,
            threshold=r_tau,
            event=r_event,
            pilot_rho=float(pilot_rho),
        )
    return AuditResult(
        epsilon_lower=lb,
        claimed_epsilon=float(eps),
        delta=float(delta),
        alpha=alpha,
        refuted=lb > eps,
        counts=counts,
        threshold=tau,
        event=event,
        pilot_epsilon=float(pilot_eps),
        rho=rho_audit,
    )


def counter_sampler(
    factory: Callable[[int, np.random.Generator], object], batch: int = 5_000
) -> Sampler:
    """A sampler that runs a continual counter over a whole stream, all releases as output.

    ``factory(replicas, rng)`` builds a fresh counter; the stream (shape (T, d)) is fed to all
    replicas at once, so ``batch`` trials cost one vectorised run. Output shape (n, T, d).
    """

    def sample(stream: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
        stream = np.asarray(stream, dtype=float)
        outs = []
        done = 0
        while done < n:
            m = min(batch, n - done)
            counter = factory(m, rng)
            releases = [counter.step(x) for x in stream]  # type: ignore[attr-defined]
            outs.append(np.stack(releases, axis=1))
            done += m
        return np.concatenate(outs, axis=0)

    return sample


def learner_sampler(
    factory: Callable[[int, np.random.Generator], object],
    run: Callable[[object, np.ndarray], np.ndarray],
    batch: int = 5_000,
) -> Sampler:
    """A sampler that runs a learner over a whole input stream, everything it releases as output.

    ``factory(replicas, rng)`` builds a fresh learner with ``replicas`` independent replicas
    (its noise already scaled as the audit wants); ``run(learner, stream)`` feeds it the stream
    (act, then observe, every round) and returns what it released, shape (replicas, ...). A batch
    of ``batch`` trials costs one vectorised run; the output has shape (n, ...).
    """
    batch = checked_count("batch", batch)

    def sample(stream: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
        outs = []
        done = 0
        while done < n:
            m = min(batch, n - done)
            out = np.asarray(run(factory(m, rng), stream), dtype=float)
            if out.ndim < 1 or out.shape[0] != m:
                raise ValueError(
                    f"run() must return the {m} replicas' releases along axis 0, got shape "
                    f"{out.shape}"
                )
            outs.append(out)
            done += m
        return np.concatenate(outs, axis=0)

    return sample
