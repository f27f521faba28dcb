import sys, re, collections, bisect
exec(open('/tmp/diag/cmpfull.py').read().split("tot = collections.Counter()")[0])
seen_by = collections.Counter(); miss_by = collections.Counter()
for w in wins:
    a, b = bisect.bisect_left(times, w['on']), bisect.bisect_right(times, w['off'])
    bc = collections.defaultdict(list)
    for r in w['recs']:
        if r[1] == 'C':
            sec = r[2] if r[4] not in ('FF','F') else 2**64-1
            bc[(sec, r[3])].append(r[0])
    for e in ft[a:b]:
        if e[1] != 'C': continue
        cands = bc.get((e[6], e[7]), [])
        hit = any(abs(t - e[0]) < 100000 for t in cands)
        key = (e[5].split('/')[0].split('-')[0], e[4][:3])
        (seen_by if hit else miss_by)[key] += 1
keys = set(seen_by) | set(miss_by)
for k in sorted(keys, key=lambda k: -(miss_by[k])):
    if miss_by[k] or seen_by[k] > 50: print(k, 'seen', seen_by[k], 'missed', miss_by[k])
