"""Experiments: the jobs behind ``dponline demo`` and friends."""
