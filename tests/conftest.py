"""Test configuration: hypothesis profiles (``ci`` by default; ``HYPOTHESIS_PROFILE=thorough`` for more).

``ci`` keeps example counts modest (the CI machine is small) and turns off the
per-example deadline (the first NumPy call in a process is slow).
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.register_profile("thorough", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
