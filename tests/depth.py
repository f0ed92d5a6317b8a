"""How hard the search-based tests look, in one place.

`make test` (every push, CI) runs the `suite` profile: hypothesis's usual 100 examples per property, which
keeps the whole suite inside its 15-minute budget on a 2-core machine. A deeper run, e.g. nightly or before a
release, sets `HYPOTHESIS_PROFILE=nightly` (1,000 examples per property, and the busy-cluster equivalence
checks over more seeds): `make test HYPOTHESIS_PROFILE=nightly PYTEST_ARGS=tests/engine`.
A property test that needs a different depth sets it relative to these (`examples(...)`), never a bare number,
so the profile still decides."""
import os

from hypothesis import settings

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "suite")
NIGHTLY = PROFILE == "nightly"

settings.register_profile("suite", max_examples=100)
settings.register_profile("nightly", max_examples=1000)
settings.load_profile(PROFILE)


def examples(suite: int) -> int:
    """A property's own example count in the suite profile, ten times that in the nightly one."""
    return suite * 10 if NIGHTLY else suite


def seeds(suite: int, nightly: int) -> range:
    """Seeds for a fixed-world check run over several random worlds (not a hypothesis search)."""
    return range(nightly if NIGHTLY else suite)
