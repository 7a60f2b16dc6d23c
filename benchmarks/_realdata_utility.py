"""Downstream utility of synthetic records: a classifier trained on them, tested on real
held-out records (``bench_realdata.py``'s ``clf_acc`` columns).

Each table has one target column (:data:`TARGETS`: Adult's income, whether a ``nass``
occupant died, whether an ``mpls`` stop ended in a citation, ``fair``'s affairs rate bin).
The classifier is scikit-learn's ``HistGradientBoostingClassifier`` with every other column
a categorical feature (codes), its defaults otherwise and ``random_state`` fixed; accuracy
is on the real held-out 20 %; it runs on one thread. ``clf_acc_real``, the same classifier
trained on the real training records, is the ceiling.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TARGETS", "classifier_accuracy", "pgmdp_sample"]

#: The target column of each table.
TARGETS = {"adult": "income>50K", "nass": "dead", "mpls": "citationIssued", "fair": "affairs"}


def classifier_accuracy(train: np.ndarray, test: np.ndarray, target: int, seed: int = 0) -> float:
    """Held-out accuracy of a classifier of column ``target`` trained on ``train`` codes."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from threadpoolctl import threadpool_limits

    x_cols = [j for j in range(train.shape[1]) if j != target]
    y = train[:, target]
    if np.unique(y).size < 2:  # one class only: the classifier is that constant
        return float(np.mean(test[:, target] == y[0]))
    clf = HistGradientBoostingClassifier(categorical_features=np.ones(len(x_cols), bool),
                                         random_state=seed)  # fmt: skip
    with threadpool_limits(1):  # one thread: OpenMP's threads crawl on a shared machine
        clf.fit(train[:, x_cols], y)
        return float(np.mean(clf.predict(test[:, x_cols]) == test[:, target]))


def pgmdp_sample(model_path, n: int, seed: int) -> np.ndarray:
    """``n`` records of a ``pgm-dp fit --data`` fit drawn by ``pgm-dp sample``'s sampler
    (:class:`pgm_dp.table.synth.Synthesizer`), as codes on the declared domain."""
    from pgm_dp.table.synth import Synthesizer

    synth = Synthesizer(model_path)
    codes, _ = synth.codes(synth.entropy(seed), 0, n)
    return codes
