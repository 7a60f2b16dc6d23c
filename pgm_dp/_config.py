"""Package-wide numerical configuration: float64 everywhere in JAX.

KL divergences and log-likelihoods of models with thousands of cells lose several digits in
float32, so pgm_dp enables ``jax_enable_x64`` when it is imported (the user need not).
"""

from __future__ import annotations

import jax

jax.config.update("jax_enable_x64", True)
