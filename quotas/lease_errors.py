"""User-facing messages of the lease, lending-policy and switch services; tests assert these exact texts."""

PRODUCTION_NEVER_BORROWS = "Production (online inference) never runs on borrowed capacity."
CLASS_MAY_NOT_BORROW = "{tenant} may not borrow for priority class {priority_class}."
BORROWING_PAUSED = "Borrowing is paused by the platform: no new leases."
BORROW_LIMIT = ("{tenant} would borrow {total} GPUs of {gpu_model} on {pool}, above its borrowing limit of "
                "{limit}.")
LENDING_LIMIT = ("{tenant} would lend {total} GPUs of {gpu_model} on {pool}, above its lending limit of {limit}.")
LENDING_RESERVED = ("{tenant} would lend {total} GPUs of {gpu_model} on {pool}, but only {lendable} of its "
                    "{base} GPU base quota may be lent ({reserved} reserved).")
UNASSIGNED_EXHAUSTED = ("The unassigned pool of {gpu_model} on {pool} has {unassigned} GPUs; {total} would be "
                        "on loan.")
SELF_LOAN = "A tenant cannot borrow from itself."
LEASE_TOO_LONG = "The lease would run {minutes} minutes, above {tenant}'s maximum of {max_minutes}."
LEASE_WINDOW = "A lease must expire after it starts."
LEASE_GPUS = "A lease covers at least one GPU."
LEASE_NOT_OPEN = "Lease #{id} is already {state}."
LEASE_AT_MAX_LENGTH = "Lease #{id} has reached its maximum length of {max_minutes} minutes."
LEASE_PROTECTED = "Lease #{id} is protected until {until}; only a production lender job may reclaim it earlier."

POLICY_NEEDS_ADMIN = "Only platform admins and {tenant}'s tenant admins can change its lending policy."
BORROWING_SIDE_NEEDS_PLATFORM = "Only platform admins can change borrowing limits, lease lengths and borrow classes."
UNKNOWN_PRIORITY_CLASS = "Unknown priority class {value!r}."
PROTECTION_ABOVE_LENGTH = "The protected window must fit in the longest lease."
REASON_REQUIRED = "Say why: the reason is kept in the history."

SWITCH_NEEDS_PLATFORM = "Only platform admins can change the rollout switches."
UNKNOWN_SWITCH = "Unknown switch {value!r}."
BAD_SWITCH_VALUE = "{key} takes {allowed}."
