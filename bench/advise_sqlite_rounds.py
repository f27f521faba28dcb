#!/usr/bin/env python3
"""SQLite commit rates under each journal_mode x synchronous, in alternating rounds (bench/advise_sqlite.sh).

usage: advise_sqlite_rounds.py WORKDIR SECONDS ROUNDS
Prints `round journal_mode synchronous=LEVEL 1 commits_per_s` lines. One connection; each commit is one
INSERT of a 100-byte row in its own transaction. Each database is first filled past one WAL checkpoint
(1200 commits with synchronous=OFF), and a second connection stays open through all rounds, so the WAL is
measured in a long-running application's steady state: rewritten from its start after each checkpoint, not
growing. (When the last connection closes, SQLite checkpoints and deletes the WAL; the next one appends to a
new file until its first checkpoint, and pays for appending: see docs/advise.md.)
"""
import os
import sqlite3
import sys
import time

work, secs, rounds = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
settings = [(mode, sync) for mode in ("WAL", "DELETE") for sync in ("FULL", "NORMAL")]


def connect(mode, sync, level):
    db = sqlite3.connect(os.path.join(work, f"{mode}-{sync}.db"), isolation_level=None)
    got = db.execute(f"pragma journal_mode={mode}").fetchone()[0]
    if got.upper() != mode:
        sys.exit(f"journal_mode={mode} refused (got {got})")
    db.execute(f"pragma synchronous={level}")
    return db


def commit(db):
    db.execute("begin")
    db.execute("insert into t (b) values (?)", ("x" * 100,))
    db.execute("commit")


holders = []
for mode, sync in settings:
    db = connect(mode, sync, "OFF")
    db.execute("create table t (a integer primary key, b text)")
    for _ in range(1200):
        commit(db)
    holders.append(db)

for rnd in range(1, rounds + 1):
    shift = (rnd - 1) % len(settings)
    for mode, sync in settings[shift:] + settings[:shift]:
        db = connect(mode, sync, sync)
        n, start = 0, time.monotonic()
        while time.monotonic() - start < secs:
            commit(db)
            n += 1
        rate = n / (time.monotonic() - start)
        db.close()
        print(f"{rnd} {mode} synchronous={sync} 1 {rate:.1f}", flush=True)
