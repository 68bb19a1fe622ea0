"""Experiments: the jobs behind ``dponline demo`` and friends, and the pieces a user calls.

* :mod:`~dponline.experiments.rounds`: the round loop (``play``);
* :mod:`~dponline.experiments.runner`: learners x environments x seeds from a TOML spec;
* :mod:`~dponline.experiments.checkpoints`: a learner's state to disk and back without pickle
  (``save_state`` / ``load_state``; ``resume_state`` for a deployment, which continues a
  checkpoint once), and result tables (``save_frame`` / ``load_frame``);
* :mod:`~dponline.experiments.one_run_audit`: the one-run audit of a learner on your stream;
* :mod:`~dponline.experiments.replay`: replay evaluation on a log of uniform play.
"""
