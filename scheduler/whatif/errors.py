"""What users read when a what-if request is refused; tests assert these texts."""
from django.utils.translation import gettext_lazy as _

NOT_ALLOWED = _("Only platform admins and quota approvers may run what-if replays.")
WINDOW_ORDER = _("The window must end after it starts.")
WINDOW_TOO_LONG = _("A window covers at most {days} days.")
WINDOW_IN_FUTURE = _("The window must end by now: only history can be replayed.")
UNKNOWN_POOL = _("No pool is named {name}.")
UNKNOWN_TENANT = _("No tenant is named {slug}.")
UNKNOWN_GPU_MODEL = _("No GPU model is named {name}.")
UNKNOWN_UNIT = _("No organisation unit is named {slug}.")
UNIT_LANE_MISSING = _("{unit} has no quota on {pool}/{gpu_model}: set the unit's quota there first (a limit "
                      "belongs to a guarantee).")
UNKNOWN_CLASS = _("Unknown class {name}.")
NOT_DONE = _("What-if #{id} is {status}: only a finished run can be attached as evidence.")
SACCT_EMPTY = _("The sacct output holds no job.")
SACCT_TOO_LARGE = _("The sacct output is larger than {mb} MB: import a shorter window.")
SACCT_NOT_TEXT = _("The sacct output must be UTF-8 text.")
