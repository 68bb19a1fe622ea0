"""Derive ``src/dponline/data/open_bandit_random_all.csv.gz`` from the Open Bandit Dataset's
small sample (Saito, Aihara, Matsutani & Narita, "Open Bandit Dataset and Pipeline", NeurIPS
2021 Datasets and Benchmarks), as shipped inside the ``obp`` 0.4.1 wheel at
``obp/dataset/obd/random/all/all.csv`` (logged by uniform random play, campaign "all").

Usage (from the repository root; the wheel is read in place, nothing is unpacked)::

    pip download obp==0.4.1 --no-deps -d /tmp/obp
    python scripts/derive_open_bandit_sample.py /tmp/obp/obp-0.4.1-py3-none-any.whl

What is kept, row for row and in the source's order (the source's rows are in time order):
the round index (the source's unnamed first column), ``item_id`` (0-79), ``position`` (1-3, as
in the source), ``click`` (0/1), ``propensity_score`` (its text unchanged) and the four
anonymised user features, each hash replaced by its index in the sorted list of that column's
distinct hashes (a relabelling: which rows share a value is unchanged). Dropped: the timestamp,
the 80 user-item affinity columns and item_context.csv.

The output is deterministic: the CSV text is fixed by the source, and the gzip stream is written
with no file name and modification time 0 at level 9. The script checks the source's sha256 and
prints the sha256 of the CSV text and of the gzip file (both recorded in the data README).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
import zipfile
from pathlib import Path

SOURCE = "obp/dataset/obd/random/all/all.csv"
SOURCE_SHA256 = "7168295b6e0a9eabcf3392320a5dd434e542b68e705d5cd9491499af589812f1"
OUTPUT = Path(__file__).resolve().parents[1] / "src/dponline/data/open_bandit_random_all.csv.gz"
USER_FEATURES = [f"user_feature_{i}" for i in range(4)]
COLUMNS = ["round", "item_id", "position", "click", "propensity_score", *USER_FEATURES]


def derive(source: bytes) -> str:
    """The derived CSV text from the source CSV's bytes."""
    rows = list(csv.DictReader(io.StringIO(source.decode("utf-8"))))
    codes = {
        f: {h: i for i, h in enumerate(sorted({row[f] for row in rows}))} for f in USER_FEATURES
    }
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow(
            [
                int(row[""]),
                int(row["item_id"]),
                int(row["position"]),
                int(row["click"]),
                row["propensity_score"],
                *(codes[f][row[f]] for f in USER_FEATURES),
            ]
        )
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path, help="the obp-0.4.1-py3-none-any.whl file")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    with zipfile.ZipFile(args.wheel) as wheel:
        source = wheel.read(SOURCE)
    digest = hashlib.sha256(source).hexdigest()
    if digest != SOURCE_SHA256:
        raise SystemExit(f"{SOURCE} has sha256 {digest}, expected {SOURCE_SHA256}")
    text = derive(source).encode("utf-8")
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as gz:
        gz.write(text)
    args.output.write_bytes(buffer.getvalue())
    print(f"source   {SOURCE} sha256 {digest}")
    print(f"csv text sha256 {hashlib.sha256(text).hexdigest()} ({len(text):,} bytes)")
    print(
        f"written  {args.output} sha256 {hashlib.sha256(buffer.getvalue()).hexdigest()} "
        f"({len(buffer.getvalue()):,} bytes)"
    )


if __name__ == "__main__":
    main()
