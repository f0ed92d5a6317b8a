"""What a person is told when a preemption action is refused."""
from django.utils.translation import gettext_lazy as _

APPROVE_NEEDS_APPROVER = _("Only platform quota approvers may approve a planned preemption.")
REJECT_NEEDS_APPROVER = _("Only platform quota approvers may reject a planned preemption.")
REJECT_NEEDS_COMMENT = _("Say why: the rejection is kept with the preemption's audit record.")
NOT_AWAITING_APPROVAL = _("Preemption #{id} is {state}, not awaiting approval.")
CHECKPOINT_NOT_MEMBER = _("Only members of the job's tenant may report its checkpoints.")
CHECKPOINT_NOT_RUNNING = _("Job #{id} is {status}: only admitted or running jobs report checkpoints.")
