# Print a crashtest JSON without its wall-clock fields (started_at, command, duration_s, cycles_per_min).
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("started_at", "command"):
    d.pop(k, None)
c = d["crashtest"]
for k in ("duration_s", "cycles_per_min"):
    c.pop(k, None)
print(json.dumps(d, sort_keys=True, indent=1))
