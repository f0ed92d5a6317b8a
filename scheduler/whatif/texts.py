"""What a what-if result says about itself: its warnings (whatif/sim/warnings.py) and the live figures its
baseline differs from, as texts in the reader's language made from the stored codes and figures."""
from django.utils.translation import gettext_lazy as _

WARNINGS = {
    "no_nodes": _("The pool had no schedulable nodes at the window's start ({nodes} nodes in its history): "
                  "nothing could run in the replay, and its figures say nothing about the pool."),
    "little_history": _("Only {jobs} jobs arrived in this window (fewer than {minimum}): its figures rest on a "
                        "handful of jobs."),
    "quota_above_capacity": _("Base quotas on {gpu_model} add up to {quota_gpus} GPUs, above the {capacity_gpus} "
                              "schedulable GPUs: the guarantee cannot be kept."),
}
PROPOSAL_PREFIX = _("Proposal: {text}")
FIGURES = {
    "started": _("jobs started"),
    "utilisation": _("utilisation"),
    "wait_p50_seconds": _("wait p50 (min)"),
    "wait_p95_seconds": _("wait p95 (min)"),
    "preemptions": _("preemptions"),
}


def _minutes(seconds):
    """Waits are stored in seconds and shown in minutes, as on the charts and the request panel."""
    return round(seconds / 60, 1)


def _percent(fraction):
    return f"{fraction * 100:.1f}%"


# How each figure is shown: one unit per figure on every what-if page (counts stay counts).
SHOWN = {"utilisation": _percent, "wait_p50_seconds": _minutes, "wait_p95_seconds": _minutes}
# What bound the waiting time (whatif/sim/binding.py), where the replay had CPU cores or memory to fit.
DIMENSIONS = {"gpus": _("GPUs"), "cpus": _("CPU cores"), "memory_gb": _("memory"),
              "other": _("quota or queue order")}
BOUND = _("{dimension} bound {share} of waiting time")
BOUND_REST = _("{main}; the rest: {others}")
ALL_TENANTS = _("All tenants")
DIFFERS = _("The baseline replay differs from the live record in: {names}.")
AGREES = _("The baseline replay agrees with the live record within the tolerance.")


def warning_texts(warnings: dict) -> list[str]:
    """The window's warnings, then the proposal's quota warnings that the baseline did not already have."""
    out = [str(WARNINGS[w["code"]]).format(**w) for w in warnings.get("window", ())]
    out += [str(WARNINGS[w["code"]]).format(**w) for w in warnings.get("baseline", ())]
    known = {w.get("gpu_model") for w in warnings.get("baseline", ())}
    out += [str(PROPOSAL_PREFIX).format(text=str(WARNINGS[w["code"]]).format(**w))
            for w in warnings.get("proposal", ()) if w.get("gpu_model") not in known]
    return out


def live_rows(fidelity: dict) -> tuple[list[dict], str]:
    """Rows (figure, live, replay, differs) and the sentence that sums them up; none for an older result."""
    live = fidelity.get("live") or {}
    rows = []
    for name, values in live.items():
        if name in FIGURES:
            shown = SHOWN.get(name, lambda value: value)
            rows.append({**values, "name": str(FIGURES[name]),
                         **{side: None if values[side] is None else shown(values[side]) for side in ("live", "replay")}})
    if not rows:
        return [], ""
    differs = [str(FIGURES[name]) for name in fidelity.get("differs", ()) if name in FIGURES]
    return rows, str(DIFFERS).format(names=", ".join(differs)) if differs else str(AGREES)


def binding_text(binding: dict | None) -> str:
    """"memory bound 62.0% of waiting time; the rest: GPUs 30.0%, ..." from a summary's `binding`."""
    if not binding:
        return ""
    shares = binding["shares"]
    top = binding["top"]
    main = str(BOUND).format(dimension=str(DIMENSIONS.get(top, top)), share=_percent(shares[top]))
    others = [f"{DIMENSIONS.get(d, d)} {_percent(share)}" for d, share in shares.items() if d != top]
    return str(BOUND_REST).format(main=main, others=", ".join(others)) if others else main


def binding_rows(result: dict) -> list[dict]:
    """Per tenant (all tenants first): what bound the waiting time now and proposed; none for a replay of
    GPUs alone (or an older result)."""
    baseline, proposal = result.get("baseline") or {}, result.get("proposal") or {}
    if "binding" not in baseline and "binding" not in proposal:
        return []
    rows = [{"tenant": str(ALL_TENANTS), "dimension": (baseline.get("binding") or {}).get("top"),
             "baseline": binding_text(baseline.get("binding")), "proposal": binding_text(proposal.get("binding"))}]
    by_tenant = {side: {r["tenant"]: r.get("bound_by") for r in figures.get("tenants", ())}
                 for side, figures in (("baseline", baseline), ("proposal", proposal))}
    for tenant in sorted(set(by_tenant["baseline"]) | set(by_tenant["proposal"])):
        b, p = by_tenant["baseline"].get(tenant), by_tenant["proposal"].get(tenant)
        if b or p:
            rows.append({"tenant": tenant, "dimension": (b or {}).get("top"), "baseline": binding_text(b),
                         "proposal": binding_text(p)})
    return rows
