"""Private-PGM's MST and AIM on mbi 2.x, in a process of their own: the driver of
``bench_realdata.py``'s ``mst`` and ``aim`` contenders.

The mechanisms (``mechanisms/mst.py`` and ``aim.py`` of the Private-PGM repository, written
for mbi < 2, followed step by step on mbi 2.x's API) are :mod:`pgm_dp.compare.peers`, which also
runs them beside pgm_dp's learners in ``pgm-dp compare --data FILE --peers``; its docstring
gives every step. This driver fits one and writes it as its calibrated junction tree
(``_realdata_tree.save_tree``) on the original domain.

``python benchmarks/_peers_mbi.py --method mst|aim --train CODES.csv --domain DOM.json
--epsilon 1 --delta 1e-9 --seed 0 --out tree.npz`` (imports ``pgm_dp.compare.peers``, which needs
NumPy, networkx and mbi 2.x only, not JAX's side of pgm_dp).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.setdefault("JAX_ENABLE_X64", "1")
# XLA's CPU back end at optimisation level 0: every AIM round (and each MST estimate) fits a
# new clique set, so one new program is compiled per round, and compiling dominates: on Adult
# a 19-clique fit compiled in 38-68 s at the default level and 15-24 s at level 0, while its
# 1,000 mirror-descent steps ran in 0.4 s. (--xla-default keeps XLA's own level.)
FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
if "--xla-default" not in sys.argv and FAST_COMPILE not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + FAST_COMPILE).strip()

import numpy as np  # noqa: E402

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)),
                os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]  # fmt: skip
from _realdata_tree import save_tree  # noqa: E402

from pgm_dp.compare.peers import aim, calibrated, mst  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--method", choices=["mst", "aim"], required=True)
    ap.add_argument("--train", required=True, help="CSV of integer codes")
    ap.add_argument("--domain", required=True, help="JSON {column: size}")
    ap.add_argument("--epsilon", type=float, required=True)
    ap.add_argument("--delta", type=float, default=1e-9)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-model-size", type=float, default=80.0, help="AIM, MB")
    ap.add_argument("--max-iters", type=int, default=1000, help="AIM's mirror-descent steps")
    ap.add_argument("--out", required=True)
    ap.add_argument("--xla-default", action="store_true", help="XLA's default optimisation")
    a = ap.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_compilation_cache", False)  # mbi's advice for sweeps
    import mbi
    import pandas as pd

    sizes = json.loads(open(a.domain).read())
    frame = pd.read_csv(a.train)
    domain = mbi.Domain(tuple(sizes), tuple(int(s) for s in sizes.values()))
    data = mbi.Dataset({c: frame[c].to_numpy() for c in sizes}, domain)
    rng = np.random.default_rng(a.seed)
    if a.method == "mst":
        model, mapping = mst(mbi, data, a.epsilon, a.delta, rng)
    else:
        model, mapping = aim(mbi, data, a.epsilon, a.delta, rng, a.max_model_size, a.max_iters)
    t = calibrated(mbi, model, mapping, domain)
    save_tree(a.out, t.attrs, list(t.shape.values()), t.cliques, t.tables, t.graph.edges)
    print(f"{a.method}: {len(model.cliques)} cliques written to {a.out}", flush=True)


if __name__ == "__main__":
    main()
