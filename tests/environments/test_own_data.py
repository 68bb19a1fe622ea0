"""A user's own loss sequence and advice read from files, by the catalogue and by specs."""

from __future__ import annotations

import numpy as np
import pytest

from dponline.environments.catalogue import build_environment
from dponline.environments.expert_advice import ExpertAdviceBandit, arm_experts, random_advice
from dponline.environments.own_data import bandit_losses, expert_losses, file_digest, read_array
from dponline.environments.real import stock_losses
from dponline.experiments.runner import run_task
from dponline.experiments.spec import SpecError, parse_spec
from dponline.protocol import FeedbackKind


def _losses(t: int = 30, k: int = 3, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((t, k))


def test_npy_csv_with_a_header_and_whitespace_text_read_alike(tmp_path):
    losses = np.round(_losses(), 6)
    np.save(tmp_path / "l.npy", losses)
    np.savetxt(tmp_path / "l.csv", losses, delimiter=",", header="a,b,c", comments="")
    np.savetxt(tmp_path / "l.txt", losses)
    for name in ("l.npy", "l.csv", "l.txt"):
        np.testing.assert_array_equal(read_array(tmp_path / name, 2, "losses"), losses)
    env = bandit_losses(20, None, str(tmp_path / "l.csv"))
    assert env.horizon == 20 and env.name == "bandit_losses:l.csv"
    np.testing.assert_array_equal(env.losses, losses[:20])
    full = expert_losses(None, None, str(tmp_path / "l.npy"))
    assert full.horizon == 30 and full.feedback_kind is FeedbackKind.LOSS_VECTOR


def test_bad_files_are_refused_naming_the_file(tmp_path):
    np.save(tmp_path / "three.npy", np.zeros((2, 2, 2)))
    np.save(tmp_path / "nan.npy", np.array([[0.5, np.nan]]))
    np.save(tmp_path / "objects.npy", np.array([[0.5, None]], dtype=object), allow_pickle=True)
    (tmp_path / "words.csv").write_text("a,b\n0.5,x\n")
    (tmp_path / "l.json").write_text("[[0.5]]")
    np.save(tmp_path / "high.npy", np.array([[0.5, 1.5]]))
    cases = [
        ("missing.npy", "no file"),
        ("three.npy", r"shape \(2, 2, 2\), 2 axes"),
        ("nan.npy", "NaN or infinite"),
        ("objects.npy", "not a numeric .npy array"),
        ("words.csv", "not a table of numbers"),
        ("l.json", "must be a .npy, .csv, .txt or .tsv file"),
    ]
    for name, match in cases:
        with pytest.raises(ValueError, match=match):
            bandit_losses(None, None, str(tmp_path / name))
    with pytest.raises(ValueError, match=r"lie in \[0.5, 1.5\], outside the declared"):
        bandit_losses(None, None, str(tmp_path / "high.npy"))
    np.save(tmp_path / "ok.npy", _losses())
    with pytest.raises(ValueError, match="horizon 40 exceeds the 30 rounds"):
        bandit_losses(40, None, str(tmp_path / "ok.npy"))
    with pytest.raises(ValueError, match="SHA-256 differs"):
        bandit_losses(None, None, str(tmp_path / "ok.npy"), sha256="0" * 64)
    with pytest.raises(ValueError, match="advice_sha256 is given without an advice file"):
        bandit_losses(None, None, str(tmp_path / "ok.npy"), advice_sha256="0" * 64)


def test_advice_makes_a_bandit_with_expert_advice(tmp_path):
    losses = _losses(30, 3)
    advice = random_advice(30, 4, 3, seed=1)
    np.save(tmp_path / "l.npy", losses)
    np.save(tmp_path / "a.npy", advice)
    np.save(tmp_path / "short.npy", advice[:10])
    env = bandit_losses(None, None, str(tmp_path / "l.npy"), advice=str(tmp_path / "a.npy"))
    assert isinstance(env, ExpertAdviceBandit) and env.n_experts == 4
    np.testing.assert_array_equal(env.advice, advice)
    with pytest.raises(ValueError, match="the advice covers 10 rounds, the losses 30"):
        bandit_losses(None, None, str(tmp_path / "l.npy"), advice=str(tmp_path / "short.npy"))
    np.savetxt(tmp_path / "a.csv", advice[:, 0])
    with pytest.raises(ValueError, match=r"must be a \.npy file"):
        bandit_losses(None, None, str(tmp_path / "l.npy"), advice=str(tmp_path / "a.csv"))


def test_stock_bandit_with_experts_is_the_arm_experts_and_dirichlet_ones():
    env = build_environment(
        "stock_bandit", None, np.random.default_rng(0), dataset="nyse_o", random_experts=12
    )
    losses = stock_losses("nyse_o")
    t, k = losses.shape
    assert env.name == "stock_bandit:nyse_o+experts" and env.advice.shape == (t, k + 12, k)
    np.testing.assert_array_equal(env.advice[:, :k], arm_experts(t, k))
    np.testing.assert_array_equal(env.advice[:, k:], random_advice(t, 12, k, 0))
    plain = build_environment("stock_bandit", 50, np.random.default_rng(0))
    assert not isinstance(plain, ExpertAdviceBandit) and plain.name == "stock_bandit:djia"
    for bad in (-1, True, 2.5):
        with pytest.raises(ValueError, match="random_experts must be an integer >= 0"):
            build_environment("stock_bandit", 50, np.random.default_rng(0), random_experts=bad)
    with pytest.raises(ValueError, match=r"unknown price data set 'digits'; expected one of"):
        build_environment("stock_bandit", 50, np.random.default_rng(0), dataset="digits")


def _spec(path: str, **options) -> dict:
    return {
        "environment": {"name": "bandit_losses", "options": {"path": path, **options}},
        "learners": [{"name": "exp3"}, {"name": "batched-exp3"}],
        "seeds": 2,
    }


def test_a_spec_reads_its_files_from_its_folder_and_records_their_digests(tmp_path):
    """A relative path is the spec folder's; the digest recorded beside it keys the tasks, so
    an edited file is run again rather than read back, and a pinned digest must match. The
    tables name the file alone; the key and the seeds do not depend on the folder."""
    folder = tmp_path / "study"
    folder.mkdir()
    np.save(folder / "l.npy", _losses(40, 3))
    spec = parse_spec(_spec("l.npy"), base=folder)
    options = spec.environments[0]["options"]
    assert options["path"] == str((folder / "l.npy").resolve())
    assert options["sha256"] == file_digest(folder / "l.npy")
    tasks = spec.tasks()
    assert {t.environment_label for t in tasks} == {"bandit_losses path=l.npy"}
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    np.save(moved / "l.npy", _losses(40, 3))  # the same data in another folder
    again = parse_spec(_spec("l.npy"), base=moved).tasks()
    assert [t.key for t in again] == [t.key for t in tasks]
    assert [t.seed_sequences()[1].spawn_key for t in again] == [
        t.seed_sequences()[1].spawn_key for t in tasks
    ]
    first = run_task(tasks[0], tmp_path / "out")
    np.save(folder / "l.npy", _losses(40, 3, seed=1))  # edited: another key, run again
    edited = parse_spec(_spec("l.npy"), base=folder).tasks()
    assert edited[0].key != tasks[0].key
    assert run_task(edited[0], tmp_path / "out")["regret"].tolist() != first["regret"].tolist()
    with pytest.raises(ValueError, match="SHA-256 differs"):
        run_task(tasks[0], tmp_path / "other")  # the recorded digest is checked when built
    with pytest.raises(SpecError, match="not the sha256 the spec pins"):
        parse_spec(_spec("l.npy", sha256="0" * 64), base=folder)
    with pytest.raises(SpecError, match="no file"):
        parse_spec(_spec("absent.npy"), base=folder)
    with pytest.raises(SpecError, match="advice_sha256 is given without the file 'advice'"):
        parse_spec(_spec("l.npy", advice_sha256="0" * 64), base=folder)


def test_the_guide_s_spec_passage_runs(tmp_path):
    """docs/experiments.md's example environments, with files beside the spec: both build, and
    the NYSE one is the bench's 36 + 12 experts."""
    import re
    import tomllib
    from pathlib import Path

    page = (Path(__file__).parents[2] / "docs" / "experiments.md").read_text()
    block = re.search(r"```toml\n(.*?)```", page, re.S).group(1)
    np.save(tmp_path / "switching.npy", _losses(50, 4))
    np.save(tmp_path / "advice.npy", random_advice(50, 6, 4, seed=2))
    data = tomllib.loads(block)
    data["learners"] = [{"name": n} for n in ("exp4", "private-exp4", "batched-exp4", "exp3")]
    data["environments"][1]["learners"] = ["exp3"]
    data["horizon"] = 50
    tasks = parse_spec(data, base=tmp_path).tasks()
    assert {t.environment_label for t in tasks} == {
        "bandit_losses advice=advice.npy path=switching.npy",
        "stock_bandit dataset=nyse_o random_experts=12",
    }
    assert run_task(tasks[0], tmp_path / "out")["regret"].notna().all()


def test_a_header_of_numbers_is_data_unless_the_spec_says_header(tmp_path):
    """pandas writes a header of column numbers (0,1): read as a first round of data by
    default (a reviewer's silent extra round; with 3 columns the 2 is refused as a loss), as
    the header with header=True."""
    losses = np.round(_losses(5, 2), 6)
    lines = ["0,1"] + [",".join(repr(float(v)) for v in row) for row in losses]
    (tmp_path / "numbered.csv").write_text("\n".join(lines) + "\n")
    path = str(tmp_path / "numbered.csv")
    assert bandit_losses(None, None, path).horizon == 6  # the header as a round: said in docs
    np.testing.assert_array_equal(bandit_losses(None, None, path, header=True).losses, losses)
    (tmp_path / "plain.csv").write_text("\n".join(lines[1:]) + "\n")
    assert bandit_losses(None, None, str(tmp_path / "plain.csv"), header=False).horizon == 5
    assert bandit_losses(None, None, str(tmp_path / "plain.csv"), header=True).horizon == 4
    for bad in ("yes", 1):
        with pytest.raises(ValueError, match="header must be true, false or absent"):
            bandit_losses(None, None, path, header=bad)
    np.save(tmp_path / "l.npy", losses)
    with pytest.raises(ValueError, match="header applies to a text table"):
        bandit_losses(None, None, str(tmp_path / "l.npy"), header=True)
    # a byte-order mark (a spreadsheet's CSV) before the first row is not a header
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbf" + "\n".join(lines[1:]).encode())
    np.testing.assert_array_equal(
        bandit_losses(None, None, str(tmp_path / "bom.csv")).losses, losses
    )


def test_a_spec_without_its_file_is_refused_when_read():
    with pytest.raises(SpecError, match="'bandit_losses' needs the option 'path'"):
        parse_spec({"environment": {"name": "bandit_losses"}, "learners": [{"name": "exp3"}]})


def test_pandas_defaults_are_named_in_the_refusals(tmp_path):
    """A newcomer's CSV from pandas' to_csv with its defaults (an index column, a header of
    numbers) was refused as 'not a table of numbers' or 'losses lie in [0, 2999]': the
    refusals now say what to write instead."""
    losses = np.round(_losses(6, 3), 6)
    rows = [f"{i}," + ",".join(repr(float(v)) for v in row) for i, row in enumerate(losses)]
    (tmp_path / "indexed.csv").write_text(",0,1,2\n" + "\n".join(rows) + "\n")
    with pytest.raises(ValueError, match="index=False"):
        bandit_losses(None, None, str(tmp_path / "indexed.csv"))
    with pytest.raises(ValueError, match=r"counts the rows .* index=False"):
        bandit_losses(None, None, str(tmp_path / "indexed.csv"), header=True)
    numbered = "0,1,2\n" + "\n".join(",".join(repr(float(v)) for v in r) for r in losses)
    (tmp_path / "numbered.csv").write_text(numbered + "\n")
    with pytest.raises(ValueError, match=r"a header of numbers .* give header = true"):
        expert_losses(None, None, str(tmp_path / "numbered.csv"))
    assert expert_losses(None, None, str(tmp_path / "numbered.csv"), header=True).horizon == 6


def test_an_experts_option_beside_an_environments_own_advice_is_a_spec_error(tmp_path):
    # it was refused only when the task was built, naming the task, not the spec's field
    np.save(tmp_path / "l.npy", np.full((30, 3), 0.5))
    np.save(tmp_path / "a.npy", random_advice(30, 4, 3, seed=1))
    exp4 = {"name": "private-exp4", "options": {"experts": "arms"}}
    advised = [
        {"name": "expert_advice"},
        {"name": "stock_bandit", "options": {"random_experts": 2}, "horizon": 30},
        {"name": "bandit_losses", "options": {"path": "l.npy", "advice": "a.npy"}},
    ]
    for env in advised:
        data = {"environment": env, "learners": [exp4], "seeds": 1, "horizon": 30}
        with pytest.raises(SpecError, match=r"learners\[0\]\.options': experts = 'arms' beside"):
            parse_spec(data, base=tmp_path).tasks()
    plain = {"name": "stock_bandit", "options": {"random_experts": 0}}  # no advice: allowed
    assert parse_spec({"environment": plain, "learners": [exp4], "horizon": 30}).tasks()
    kept_apart = {  # the advised environment runs the other learner only
        "environments": [{**advised[0], "learners": ["exp3"]}, plain],
        "learners": [{"name": "exp3"}, exp4],
        "horizon": 30,
    }
    assert len(parse_spec(kept_apart).tasks()) == 3
