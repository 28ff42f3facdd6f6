#!/usr/bin/env python3
"""Replace some learners' cells of a committed suite file with a newer run's, keep everything else.

After a change to one learner (or to `auto`'s prior), only that learner's cells are stale: its
privboost runs take seconds (`scripts/suite.py --no-peers --learners L`), while the peers of a full
run (diffprivlib, InterpretML, GBDT) take half an hour from an empty cache. This script takes the
named learners' cells from NEW, every other cell (the other learners, the peers, the references) and
the sets from BASE, and writes OUT as JSON and, with --markdown, the table `scripts/suite.py` would
print for it. What was replaced, from which run, is recorded in OUT's `replaced` list, so the file
says which of its cells come from which command.

    python3 scripts/suite.py --no-peers --learners dp-linear --jobs 2 --sets ... --json /tmp/new.json
    python3 scripts/suite_replace.py docs/results/suite/suite.json /tmp/new.json --learners dp-linear \
        --out docs/results/suite/suite.json --markdown docs/results/suite/suite.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite  # noqa: E402  (scripts/suite.py: the table's layout)


def replace(base: dict, new: dict, learners: list, keep: list = ()) -> dict:
    """BASE with the cells of `learners` on NEW's sets taken from NEW (every such cell must be in
    NEW: a partial run would silently keep stale cells), except the cells of the (task, delta)
    pairs in `keep`: a mechanism the change left as it was keeps its cells (a fresh draw of its
    noise would only move the tables by chance)."""
    sets = {s["name"] for s in new["sets"]}
    key = lambda c: (c["set"], c["learner"], c["epsilon"], c["delta"])  # noqa: E731
    kept = lambda c: (c["task"], c["delta"]) in keep  # noqa: E731
    fresh = {key(c): c for c in new["cells"] if c["learner"] in learners and not kept(c)}
    stale = [c for c in base["cells"]
             if c["learner"] in learners and c["set"] in sets and not kept(c)]
    missing = [key(c) for c in stale if key(c) not in fresh]
    if missing:
        raise SystemExit(f"suite_replace: the new run lacks {len(missing)} cells, e.g. {missing[0]}")
    # In place: every other cell, and the order of all, as in BASE.
    cells = [fresh[key(c)] if key(c) in fresh and c in stale else c for c in base["cells"]]
    extra = [c for k, c in fresh.items() if k not in {key(c) for c in stale}]
    out = dict(base)
    out["cells"] = cells + extra
    # A peer new to BASE (interpret-ebm-sub) joins its protocol's peers, with its hyperparameters.
    peers = [l for l in learners if l in suite.PEERS and l not in base["protocol"]["peers"]]
    if peers:
        proto = dict(base["protocol"])
        have = set(proto["peers"]) | set(peers)
        proto["peers"] = [p for p in suite.PEERS if p in have]
        # A run without peers (--no-peers) records its hyperparameters as null.
        hyper = dict(proto.get("peer_hyperparameters") or {})
        new_hyper = new["protocol"].get("peer_hyperparameters") or {}
        hyper.update({p: new_hyper[p] for p in peers if p in new_hyper})
        proto["peer_hyperparameters"] = hyper
        out["protocol"] = proto
    # The replaced learners' fit times are the new run's (over the same sets).
    out["fit_time_totals"] = (
        [t for t in base.get("fit_time_totals", []) if t.get("learner") not in learners]
        + [t for t in new.get("fit_time_totals", []) if t.get("learner") in learners])
    out["replaced"] = list(base.get("replaced", [])) + [{
        "learners": learners,
        "sets": sorted(sets),
        "kept": [f"{t}, delta {d:g}" for t, d in keep],
        "cells": len(stale) + len(extra),
        "from_command": new.get("command"),
        "from_git": new.get("git"),
        "from_created": new.get("created"),
        "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }]
    return out


def self_test() -> int:
    def cell(s, learner, eps, delta, v, task="binary"):
        return {"set": s, "task": task, "learner": learner, "epsilon": eps, "delta": delta, "v": v}
    base = {"sets": [{"name": "a"}, {"name": "b"}], "cells": [
        cell("a", "dp-linear", 1, 0.0, 1), cell("a", "gbdt", None, None, 2),
        cell("a", "dp-linear", 1, 1e-6, 3), cell("b", "dp-linear", 1, 0.0, 4)]}
    new = {"sets": [{"name": "a"}], "cells": [
        cell("a", "dp-linear", 1, 0.0, 10), cell("a", "dp-linear", 1, 1e-6, 30)]}
    out = replace(base, new, ["dp-linear"])
    # in place, only the learner's cells of NEW's sets, the rest untouched
    assert [c["v"] for c in out["cells"]] == [10, 2, 30, 4], out["cells"]
    assert out["replaced"][0]["cells"] == 2
    # kept (task, delta) pairs stay as in BASE
    assert [c["v"] for c in replace(base, new, ["dp-linear"], [("binary", 0.0)])["cells"]] == [1, 2, 30, 4]
    # a run that lacks a cell it should replace is refused
    try:
        replace(base, {"sets": [{"name": "a"}], "cells": new["cells"][:1]}, ["dp-linear"])
    except SystemExit:
        pass
    else:
        raise AssertionError("a partial run was accepted")
    assert base["cells"][0]["v"] == 1, "BASE was modified"
    # a peer new to BASE joins its protocol, in suite.PEERS's order, BASE unchanged
    base["protocol"] = {"peers": ["diffprivlib", "gbdt"], "peer_hyperparameters": {"gbdt": 1}}
    peer = {"sets": [{"name": "a"}], "protocol": {"peer_hyperparameters": {"interpret-ebm-sub": 2}},
            "cells": [cell("a", "interpret-ebm-sub", 1, 1e-6, 5)]}
    out = replace(base, peer, ["interpret-ebm-sub"])
    assert out["protocol"]["peers"] == ["diffprivlib", "interpret-ebm-sub", "gbdt"]
    assert out["protocol"]["peer_hyperparameters"] == {"gbdt": 1, "interpret-ebm-sub": 2}
    assert [c["v"] for c in out["cells"]] == [1, 2, 3, 4, 5]
    assert base["protocol"]["peers"] == ["diffprivlib", "gbdt"]
    # a privboost-only BASE (--no-peers: hyperparameters null) takes the peers of a peers' run
    bare = dict(base, protocol={"peers": [], "peer_hyperparameters": None})
    out = replace(bare, peer, ["interpret-ebm-sub"])
    assert out["protocol"]["peer_hyperparameters"] == {"interpret-ebm-sub": 2}
    print("suite_replace.py self-test: ok")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--self-test", action="store_true", help="run the pure function's checks")
    ap.add_argument("base", nargs="?", help="the suite file whose other cells are kept")
    ap.add_argument("new", nargs="?", help="a newer scripts/suite.py run of the learners to replace")
    ap.add_argument("--learners", help="comma-separated privboost learners or peers")
    ap.add_argument("--keep", action="append", default=[], metavar="TASK:DELTA",
                    help="keep BASE's cells of this task and delta (e.g. binary:0); repeatable")
    ap.add_argument("--out")
    ap.add_argument("--markdown", help="also write the table of OUT")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    if not (args.base and args.new and args.learners and args.out):
        ap.error("give BASE, NEW, --learners and --out")
    learners = [l for l in args.learners.split(",") if l]
    bad = [l for l in learners if l not in suite.LEARNERS + suite.PEERS]
    if bad:
        raise SystemExit(f"suite_replace: not privboost learners or peers: {bad}")
    with open(args.base) as f:
        base = json.load(f)
    with open(args.new) as f:
        new = json.load(f)
    keep = [(k.split(":")[0], float(k.split(":")[1])) for k in args.keep]
    out = replace(base, new, learners, keep)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(suite.markdown(out))
    print(f"suite_replace: {out['replaced'][-1]['cells']} cells of {','.join(learners)} replaced",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
