"""CGM-EM (Bernstein et al. 2017): EM for collective graphical models and its engine.

* :mod:`.em` — :class:`CGMEM`, Alg. 2 (the EM objective, L-BFGS or EM maps);
* :mod:`.problem` — :class:`~.problem.EMProblem` (built from the release, its one reader)
  and :class:`~.problem.EMState`, the pytrees the compiled programs map;
* :mod:`.compiled` — those programs: one E-step and the whole L-BFGS loop;
* :mod:`.nlbp` — NLBP, Alg. 1: the E-step's compiled loop; :mod:`.estep` — :func:`nlbp` on its own;
* :mod:`.newton` — the E-step by Newton-CG on the convex dual of Problem (6);
* :mod:`.anderson` — Anderson acceleration of NLBP's damped map;
* :mod:`.conditioning` — gauge projection, diagonal scaling and the starts of L-BFGS;
* :mod:`.noise` — the noise model ``p(y | n)`` as the E-step sees it (smoothed, traceable).
"""

from .em import CGMEM, DEFAULT_PRIOR_PRECISION
from .estep import nlbp

# The engine's other names (EMProblem, EMState, the noise model, ...) are in its modules.
__all__ = ["CGMEM", "DEFAULT_PRIOR_PRECISION", "nlbp"]
