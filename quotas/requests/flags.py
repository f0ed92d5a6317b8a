"""What an approver should know before deciding a quota request, from the quota in force now: the request
repeats another open one for the same scope and value (duplicate), the base quota changed since it was
asked for (stale), or it asks for the quota already in force (no-op, which approval refuses)."""
from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from quotas.models import QuotaRequest
from quotas.requests import subjects

NO_OP_REFUSED = _("Request #{id} asks for {gpus} GPUs on {pool}/{gpu_model}, which is the base quota in force: "
                  "approving it would change nothing. Reject it with a comment instead.")
NO_OP_LABEL = _("No-op: {gpus} GPUs is the base quota now")
STALE_LABEL = _("Stale: the base quota is {current} GPUs now, it was {asked} when asked")
DUPLICATE_LABEL = _("Duplicate of {ids}")
# Requests that still change something when decided: later states are history.
UNDECIDED = (QuotaRequest.State.SUBMITTED, QuotaRequest.State.ENDORSED, QuotaRequest.State.APPROVED)


@dataclass(frozen=True)
class Flags:
    current_gpus: int
    stale: bool
    no_op: bool
    duplicate_of: tuple[int, ...]

    def labels(self, qr: QuotaRequest) -> list[str]:
        """The flags as the approvals page and the request page show them, in the reader's language."""
        labels = []
        if self.no_op:
            labels.append(str(NO_OP_LABEL).format(gpus=self.current_gpus))
        if self.stale:
            labels.append(str(STALE_LABEL).format(current=self.current_gpus, asked=qr.gpus_at_request))
        if self.duplicate_of:
            labels.append(str(DUPLICATE_LABEL).format(ids=", ".join(f"#{i}" for i in self.duplicate_of)))
        return labels

    def as_dict(self) -> dict:
        return {"current_gpus": self.current_gpus, "stale": self.stale, "no_op": self.no_op,
                "duplicate_of": list(self.duplicate_of)}


def request_flags(qr: QuotaRequest) -> Flags:
    existing = subjects.in_force_for(qr)
    current = existing.gpus if existing else 0
    twins = QuotaRequest.objects.filter(
        tenant_id=qr.tenant_id, unit_id=qr.unit_id, pool_id=qr.pool_id, gpu_model_id=qr.gpu_model_id, gpus=qr.gpus,
        cpu_cores=qr.cpu_cores, memory_gb=qr.memory_gb,
        workload_classes=sorted(set(qr.workload_classes)), state__in=UNDECIDED).exclude(pk=qr.pk)
    return Flags(current_gpus=current, stale=current != qr.gpus_at_request,
                 no_op=existing is not None and current == qr.gpus and all(
                     asked is None or asked == getattr(existing, field, None)
                     for field, asked in (("cpu_cores", qr.cpu_cores), ("memory_gb", qr.memory_gb))),
                 duplicate_of=tuple(twins.order_by("id").values_list("id", flat=True)))
