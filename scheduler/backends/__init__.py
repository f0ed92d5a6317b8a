"""Backends turn admissions into runs on a cluster (one backend per pool, scheduler.backends.registry);
`backend_tick` advances them."""


def backend_tick(**kwargs):
    from scheduler.backends.tick import backend_tick as tick

    return tick(**kwargs)
