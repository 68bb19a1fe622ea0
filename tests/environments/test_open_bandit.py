"""The Open Bandit Dataset sample shipped with dponline: the file is the one the data README
describes, it loads with the source's counts, the click rates and the replay log are what the
rows say, and the derivation script's recoding is the documented one."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from dponline.environments.k_armed import KArmedBandit
from dponline.environments.open_bandit import (
    OPEN_BANDIT_FILE,
    expected_kept_rounds,
    load_open_bandit_sample,
    open_bandit_arms,
    open_bandit_click_rates,
    open_bandit_log,
)
from dponline.protocol import BanditFeedback

#: recorded in src/dponline/data/README.md (the gzip file and the CSV text inside it)
FILE_SHA256 = "daa0ee6b216d2b2a683cdc793917bed8a1fb5fe0f5bc61859e1122a70991c29f"
TEXT_SHA256 = "ccf488d61a257c9642b5c89e4cb8d71802dfc930ee112a9ae96f396c0dcbc2dc"
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "derive_open_bandit_sample.py"


def test_the_shipped_file_is_the_one_the_readme_records():
    raw = resources.files("dponline.data").joinpath(OPEN_BANDIT_FILE).read_bytes()
    assert hashlib.sha256(raw).hexdigest() == FILE_SHA256
    assert hashlib.sha256(gzip.decompress(raw)).hexdigest() == TEXT_SHA256
    assert len(raw) < 300_000


def test_the_sample_has_the_source_s_counts():
    data = load_open_bandit_sample()
    assert data.n_rounds == 10_000 and data.n_items == 80 and data.n_positions == 3
    assert np.array_equal(np.unique(data.item_id), np.arange(80))
    np.testing.assert_array_equal(np.bincount(data.position)[1:], [3322, 3412, 3266])
    assert data.click.sum() == 38  # 13, 14 and 11 at positions 1, 2, 3
    np.testing.assert_array_equal(
        [data.click[data.position == p].sum() for p in (1, 2, 3)], [13, 14, 11]
    )
    np.testing.assert_array_equal(data.propensity, np.full(10_000, 1 / 80))
    np.testing.assert_array_equal(data.user_features.max(axis=0), [2, 4, 7, 7])
    assert data.user_features.min() == 0
    shown = np.bincount(data.item_id)
    assert shown.min() == 96 and shown.max() == 160
    with pytest.raises(ValueError, match="read-only"):
        data.click[0] = 1


def test_click_rates_are_clicks_over_impressions():
    data = load_open_bandit_sample()
    pooled = open_bandit_click_rates()
    assert pooled.shape == (80,) and np.all((pooled >= 0) & (pooled <= 1))
    # the numbers the module and the README state: best item 49 (3 of 114), median 0, 51 zeros
    assert pooled.argmax() == 49 and pooled[49] == pytest.approx(3 / 114)
    assert np.median(pooled) == 0.0 and np.sum(pooled == 0) == 51
    shown = np.bincount(data.item_id, minlength=80)
    assert (pooled * shown).sum() == pytest.approx(38)
    # pooling is the impression-weighted mean of the three positions' rates
    weighted = np.zeros(80)
    for p in (1, 2, 3):
        rates = open_bandit_click_rates(p)
        assert rates.shape == (80,) and np.all((rates >= 0) & (rates <= 1))
        weighted += rates * np.bincount(data.item_id[data.position == p], minlength=80)
    np.testing.assert_allclose(weighted / shown, pooled, rtol=1e-12)
    for bad in (0, 4, True, "1", 1.5, 2.0):
        with pytest.raises(ValueError, match="position must be"):
            open_bandit_click_rates(bad)


def test_the_arms_environment_draws_clicks_at_the_measured_rates():
    env = open_bandit_arms(200, np.random.default_rng(0), items=[0, 49])
    assert env.horizon == 200
    rates = open_bandit_click_rates()[[0, 49]]
    assert rates[0] == 0.0
    losses = np.array(
        [env.round(t, np.array([0, 1]))[0].loss for t in range(200)]
    )  # (rounds, replicas): replica 0 plays item 0, replica 1 item 49
    assert isinstance(env.round(0, np.array([0]))[0], BanditFeedback)
    np.testing.assert_array_equal(losses[:, 0], 1.0)  # a never-clicked item never pays
    # item 49's 200 losses: mean 1 - 3/114; the count of clicks is Binomial(200, 0.026), and
    # outside [0, 15] with probability < 1e-6
    assert 185 <= losses[:, 1].sum() <= 200
    again = open_bandit_arms(200, np.random.default_rng(0), items=[0, 49])
    np.testing.assert_array_equal(
        losses, np.array([again.round(t, np.array([0, 1]))[0].loss for t in range(200)])
    )
    every = open_bandit_arms(10, 0)
    assert isinstance(every, KArmedBandit) and every.family == "bernoulli" and every.dim == 80
    np.testing.assert_array_equal(every.means, open_bandit_click_rates())  # mean rewards
    np.testing.assert_array_equal(
        open_bandit_arms(10, 0, position=2).means, open_bandit_click_rates(2)
    )
    # the loss charged is the expected loss 1 - rate; pseudo-regret against item 49
    _, charged = every.round(0, np.array([49, 0]))
    np.testing.assert_allclose(charged, [1 - 3 / 114, 1.0])
    np.testing.assert_allclose(every.regret(np.array([[1.0, 2.0]])), [[3 / 114, 2 * 3 / 114]])


def test_the_log_is_the_sample_with_one_hot_contexts():
    data = load_open_bandit_sample()
    log = open_bandit_log()
    assert log.n_rounds == 10_000 and log.arms == 80 and log.dim == 1 + 3 + 5 + 8 + 8
    assert log.click_rate == pytest.approx(0.0038)
    np.testing.assert_array_equal(log.actions, data.item_id)  # all items: arm = item id
    np.testing.assert_array_equal(log.rewards, data.click)
    assert set(np.unique(log.contexts)) == {0.0, 1.0}
    np.testing.assert_array_equal(log.contexts.sum(axis=1), 5.0)  # intercept + 4 one-hots
    # row 0 of the shipped file: features (1, 0, 7, 7)
    hot = [n for n, v in zip(log.feature_names, log.contexts[0], strict=True) if v]
    assert hot == [
        "intercept",
        "user_feature_0=1",
        "user_feature_1=0",
        "user_feature_2=7",
        "user_feature_3=7",
    ]
    assert open_bandit_log(intercept=False).dim == 24
    assert expected_kept_rounds(10_000, 80) == pytest.approx((125.0, np.sqrt(125 * 79 / 80)))


def test_a_subset_of_items_restricts_the_rows_and_renumbers_the_arms():
    data = load_open_bandit_sample()
    first = open_bandit_log(10)
    assert first.arms == 10 and first.n_rounds == int(np.sum(data.item_id < 10)) == 1300
    np.testing.assert_array_equal(first.items, np.arange(10))
    np.testing.assert_array_equal(data.item_id[first.rows], first.actions)
    chosen = open_bandit_log([49, 3], position=2)
    rows = np.flatnonzero(np.isin(data.item_id, [49, 3]) & (data.position == 2))
    np.testing.assert_array_equal(chosen.rows, rows)
    np.testing.assert_array_equal(chosen.actions, np.where(data.item_id[rows] == 49, 0, 1))
    np.testing.assert_array_equal(chosen.propensity, 0.5)
    for bad in (1, 81, [3], [3, 3], [0, 80], [0.5, 1.0], True):
        with pytest.raises(ValueError, match="items must"):
            open_bandit_log(bad)


def _script():
    spec = importlib.util.spec_from_file_location("derive_open_bandit_sample", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_derivation_keeps_the_columns_and_codes_the_hashes_in_sorted_order():
    features = ",".join(f"user_feature_{i}" for i in range(4))
    affinity = ",".join(f"user-item_affinity_{i}" for i in range(2))
    source = (
        f",timestamp,item_id,position,click,propensity_score,{features},{affinity}\n"
        "0,2019-11-24 00:00:01,14,3,0,0.0125,bb,x,q,q,0.0,1.0\n"
        "1,2019-11-24 00:00:02,7,1,1,0.0125,aa,x,p,r,2.0,0.0\n"
    ).encode()
    assert _script().derive(source) == (
        f"round,item_id,position,click,propensity_score,{features}\n"
        "0,14,3,0,0.0125,1,0,1,0\n"
        "1,7,1,1,0.0125,0,0,0,1\n"
    )
