import sys, re, collections
tag = sys.argv[1]
s = open(f'/tmp/diag/{tag}.sum').read()
t0, t1 = [int(x) for x in re.findall(r't0 (\d+) t1 (\d+)', s)[0]]
print(s.strip())
VDA = 266338304
bpf = []
for line in open(f'/tmp/diag/{tag}.bpf'):
    p = line.split()
    if int(p[2]) != VDA: continue
    bpf.append((int(p[0]), p[1], int(p[3]), int(p[4]), p[5] if len(p) > 5 else ''))
ft = []
pat = re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+([\d.]+): (block_rq_\w+): 254,0 (\S+) (.*)$')
for line in open(f'/tmp/diag/{tag}.ftrace'):
    m = pat.match(line)
    if not m: continue
    comm, pid, cpu, flags, ts, ev, rwbs, rest = m.groups()
    t = int(round(float(ts) * 1e9))
    ft.append((t, 'I' if ev.endswith('issue') else 'C', rwbs, int(cpu), flags, comm, rest))
ftw = [e for e in ft if t0 <= e[0] <= t1]
bw = [e for e in bpf if t0 <= e[0] <= t1]
print('ftrace in window: I', sum(e[1]=='I' for e in ftw), 'C', sum(e[1]=='C' for e in ftw),
      '| bpf all: I', sum(e[1]=='I' for e in bpf), 'C', sum(e[1]=='C' for e in bpf),
      '| bpf in window: I', sum(e[1]=='I' for e in bw), 'C', sum(e[1]=='C' for e in bw))
# match ftrace completions to bpf completions by time (within 50us) and rwbs
bc = sorted(e[0] for e in bpf if e[1]=='C')
import bisect
missing = []
for e in ftw:
    if e[1] != 'C': continue
    i = bisect.bisect_left(bc, e[0]-20000)
    if i < len(bc) and bc[i] <= e[0] + 20000: continue
    missing.append(e)
print('ftrace completions in window with no bpf completion within 20us:', len(missing))
print(collections.Counter((e[3], e[4], e[5].split('/')[0]) for e in missing).most_common(10))
print('all ftrace completions by ctx:', collections.Counter((e[3], e[4], e[5].split('/')[0]) for e in ftw if e[1]=='C').most_common(10))
for e in missing[:10]: print(e)
