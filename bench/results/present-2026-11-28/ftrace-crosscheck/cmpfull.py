import sys, re, collections, bisect
tag = sys.argv[1]
VDA = 266338304
wins = []; cur = None
for line in open(f'/tmp/diag/{tag}.dump'):
    p = line.split()
    if p[0] == 'ON': cur = {'on': int(p[1]), 'recs': []}
    elif p[0] == 'OFF': cur['off'] = int(p[1])
    elif p[0] == 'STAT':
        if p[1] == 'vda': cur['stat'] = (int(p[2]), int(p[3])); wins.append(cur)
    else:
        if int(p[2]) == VDA: cur['recs'].append((int(p[0]), p[1], int(p[3]), int(p[4]), p[5] if len(p) > 5 else ''))
pat = re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+([\d.]+): (block_rq_\w+): 254,0 (\S+) \S* ?(\d+) \+ (\d+)')
ft = []
for line in open(f'/tmp/diag/{tag}.ftrace'):
    m = pat.match(line)
    if not m: continue
    comm, pid, cpu, flags, ts, ev, rwbs, sec, n = m.groups()
    ft.append((int(round(float(ts)*1e9)), 'I' if ev.endswith('issue') else 'C', rwbs, int(cpu), flags, comm, int(sec), int(n)))
ft.sort()
times = [e[0] for e in ft]
tot = collections.Counter()
for w in wins:
    a, b = bisect.bisect_left(times, w['on']), bisect.bisect_right(times, w['off'])
    fw = ft[a:b]
    fc = [e for e in fw if e[1] == 'C']
    bc = [r for r in w['recs'] if r[1] == 'C']
    sw, sf = w['stat']
    seen = len(bc)
    if seen < sw + sf:
        btimes = sorted(r[0] for r in bc)
        miss = []
        for e in fc:
            i = bisect.bisect_left(btimes, e[0] - 3000)
            if not (i < len(btimes) and btimes[i] <= e[0] + 3000): miss.append(e)
        late = [r for r in w['recs'] if r[0] > w['off']]
        print(f"window {w['on']}..{w['off']} ({(w['off']-w['on'])/1e6:.1f} ms): stat w+f {sw}+{sf}={sw+sf}, bpf C {seen}, ftrace C {len(fc)}, bpf recs after OFF {len(late)}, missing by time {len(miss)}")
        for e in miss[:6]: print('   ', e, 'ms after on', (e[0]-w['on'])/1e6, 'before off', (w['off']-e[0])/1e6)
        tot['short'] += 1
    tot['w'] += 1
print(tot)
