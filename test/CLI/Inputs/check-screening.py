#!/usr/bin/env python3
"""Screened estimates against full compiles.

    check-screening.py FULL SCREENED TOLERANCE MIN_PIPELINED

FULL is `partita plan --explain` with every layout compiled at full depth,
SCREENED the same plan with --finalists (layouts screened at a few layers,
most never compiled at full depth: "not compiled: estimated X ms"). Every
layout with a screened estimate must be within TOLERANCE (a fraction) of
its full compile's step time, and at least MIN_PIPELINED of them must be
pipelined. Prints how many were compared and the largest deviation.
"""
import re
import sys

ROW = re.compile(r"^(\S+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\S+)\s+(.*)$")


def rows(path):
    for line in open(path):
        m = ROW.match(line)
        if m and m[1] != "rank":
            yield (m[2], m[3], m[4], m[5]), m[6]


def main():
    full_path, screened_path, tolerance, least = sys.argv[1:5]
    full = {}
    for key, rest in rows(full_path):
        step = re.match(r"([\d.]+)\s", rest)
        if step:
            full[key] = float(step[1])
    compared, pipelined, worst = 0, 0, 0.0
    for key, rest in rows(screened_path):
        estimate = re.search(r"not compiled: estimated ([\d.]+) ms", rest)
        if not estimate:
            continue
        if key not in full:
            sys.exit(f"{key}: screened but not compiled in the full plan")
        deviation = abs(float(estimate[1]) / full[key] - 1)
        if deviation > float(tolerance):
            sys.exit(f"{key}: screened {estimate[1]} ms, full {full[key]} ms "
                     f"({deviation:.1%} off)")
        compared += 1
        pipelined += key[0].startswith("pipe=")
        worst = max(worst, deviation)
    if pipelined < int(least):
        sys.exit(f"only {pipelined} pipelined layouts screened (want "
                 f"{least})")
    print(f"{compared} screened estimates ({pipelined} pipelined) within "
          f"{worst:.1%} of their full compiles")


if __name__ == "__main__":
    main()
