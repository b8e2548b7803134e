"""Checks a train step's persistent bytes per device against ZeRO's formulas.

zero-memory.py REPORT.json PRESET PSI N: PSI parameters, N data devices,
mixed-precision Adam (Rajbhandari et al., ZeRO, SC 2020, §3-5): dp 16Ψ,
zero1 4Ψ + 12Ψ/N, zero2 2Ψ + 14Ψ/N, fsdp 16Ψ/N. Exits 1 beyond 1%.
"""
import json
import sys

report, preset, psi, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
held = json.load(open(report))["memory"]["persistent_by_role"]
total = held["param"] + held["grad"] + held["opt_state"]
want = {"dp": 16 * psi, "zero1": 4 * psi + 12 * psi / n,
        "zero2": 2 * psi + 14 * psi / n, "fsdp": 16 * psi / n}[preset]
ratio = total / want
print(f"{preset}: {total} bytes per device, ZeRO's formula {want:.0f} ({ratio:.4f})")
if abs(ratio - 1) > 0.01:
    sys.exit(f"{preset}: {total} bytes against {want:.0f}")
