"""Why the cluster ended a run in failure, when it says so: the error types a usage record and the job's
`job.failed` evidence carry, that the monthly report counts and the job page labels. The one place they are
named; the run services write them, the reports and pages read them."""
from django.utils.translation import gettext_lazy as _

TIMEOUT = "timeout"  # ended at its runtime limit (Slurm TIMEOUT)
OUT_OF_MEMORY = "out_of_memory"  # killed for exceeding its memory request (Slurm OUT_OF_MEMORY)

LABELS = {TIMEOUT: _("Timed out (runtime limit reached)"), OUT_OF_MEMORY: _("Out of memory")}
# The cluster's own state names for them, as a backend reports them in `backend_state`.
BACKEND_STATES = {"TIMEOUT": TIMEOUT, "OUT_OF_MEMORY": OUT_OF_MEMORY}
