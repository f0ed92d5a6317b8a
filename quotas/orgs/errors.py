"""What the organisation tree's services tell users; lazily translated, tests assert the English texts."""
from django.utils.translation import gettext_lazy as _

PLATFORM_ADMIN_ONLY = _("Only a platform admin may change the organisation tree.")
QUOTA_ROLE_REQUIRED = _("Only a platform admin or a quota approver may set a unit's guarantee.")
PARENT_CYCLE = _("{unit} cannot sit under {parent}: {parent} is inside {unit}'s subtree.")
CHILDREN_OVER = _("The guarantees inside {unit} on {pool}/{gpu_model} total {total} GPUs, above its {gpus}: "
                  "acknowledge the oversubscription to continue.")
OVER_PARENT = _("{unit}'s guarantee of {gpus} GPUs on {pool}/{gpu_model} would not fit in {parent}'s {parent_gpus}: "
                "acknowledge the oversubscription to continue.")
REASON_REQUIRED = _("Say why: the reason is kept in the history.")
UNKNOWN_ROLE = _("Unknown role {role!r}.")
MEMBERS_NEED_ADMIN = _("Only an admin of {subject} (or of a unit above it) may manage its members.")
LAST_ADMIN = _("{user} is the last admin of {subject}: name another admin first.")
NOT_A_MEMBER = _("{user} is not a member of {subject}.")
UNKNOWN_USER = _("Unknown user {value!r}.")
