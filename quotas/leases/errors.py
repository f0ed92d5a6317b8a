"""User-facing messages of the lease, lending-policy and switch services, lazily translated so they are
formatted in the language of the request; tests assert the English texts."""

from django.utils.translation import gettext_lazy as _

PRODUCTION_NEVER_BORROWS = _("Production (online inference) never runs on borrowed capacity.")
CLASS_MAY_NOT_BORROW = _("{tenant} may not borrow for priority class {priority_class}.")
BORROWING_PAUSED = _("Borrowing is paused by the platform: no new leases.")
BORROW_LIMIT = _("{tenant} would borrow {total} GPUs of {gpu_model} on {pool}, above its borrowing limit of "
                 "{limit}.")
LENDING_LIMIT = _("{tenant} would lend {total} GPUs of {gpu_model} on {pool}, above its lending limit of {limit}.")
LENDING_RESERVED = _("{tenant} would lend {total} GPUs of {gpu_model} on {pool}, but only {lendable} of its "
                     "{base} GPU base quota may be lent ({reserved} reserved).")
UNASSIGNED_EXHAUSTED = _("The unassigned pool of {gpu_model} on {pool} has {unassigned} GPUs; {total} would be "
                         "on loan.")
SELF_LOAN = _("A tenant cannot borrow from itself.")
LEASE_TOO_LONG = _("The lease would run {minutes} minutes, above {tenant}'s maximum of {max_minutes}.")
LEASE_WINDOW = _("A lease must expire after it starts.")
LEASE_GPUS = _("A lease covers at least one GPU.")
LEASE_NOT_OPEN = _("Lease #{id} is already {state}.")
LEASE_AT_MAX_LENGTH = _("Lease #{id} has reached its maximum length of {max_minutes} minutes.")
LEASE_PROTECTED = _("Lease #{id} is protected until {until}; only a production lender job may reclaim it earlier.")

POLICY_NEEDS_ADMIN = _("Only platform admins and {tenant}'s tenant admins can change its lending policy.")
BORROWING_SIDE_NEEDS_PLATFORM = _("Only platform admins can change borrowing limits, lease lengths and borrow classes.")
UNKNOWN_PRIORITY_CLASS = _("Unknown priority class {value!r}.")
PROTECTION_ABOVE_LENGTH = _("The protected window must fit in the longest lease.")
REASON_REQUIRED = _("Say why: the reason is kept in the history.")

SWITCH_NEEDS_PLATFORM = _("Only platform admins can change the rollout switches.")
UNKNOWN_SWITCH = _("Unknown switch {value!r}.")
BAD_SWITCH_VALUE = _("{key} takes {allowed}.")
DEFAULT_NEEDS_VALUE = _("The platform default needs a value; only a pool's override can be dropped.")
NO_OVERRIDE = _("{pool} has no override of {key}: it already follows the platform default.")
