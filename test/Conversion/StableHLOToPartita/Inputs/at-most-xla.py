"""Fails unless Partita's report moves at most XLA's bytes per device in at
most XLA's number of collectives. Usage: at-most-xla.py REPORT XLA_JSON."""
import json
import sys

ours = json.load(open(sys.argv[1]))["totals"]
xla = json.load(open(sys.argv[2]))
print(f"{ours['collectives']} collectives, {ours['bytes_per_device']:.0f} B "
      f"(XLA: {xla['collective_count']}, {xla['total_bytes_per_device']:.0f} B)")
if ours["bytes_per_device"] > xla["total_bytes_per_device"] + 0.5:
    sys.exit("more bytes than XLA")
if ours["collectives"] > xla["collective_count"]:
    sys.exit("more collectives than XLA")
