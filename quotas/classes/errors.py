"""What the priority class services tell users; lazily translated, tests assert the English texts."""
from django.utils.translation import gettext_lazy as _

PLATFORM_ADMIN_ONLY = _("Only a platform admin may add or change priority classes.")
REASON_REQUIRED = _("Say why: the reason is kept in the class's history.")
PRIORITY_TAKEN = _("Priority {priority} is already {other}'s: each class has its own place in the order.")
NAME_TAKEN = _("A priority class named {name!r} exists already.")
UNKNOWN_WORKLOAD = _("Unknown workload class {value!r}.")
PROTECTED_RULES = _("A protected class is never preempted and never borrows.")
UNKNOWN_FIELD = _("A priority class has no field {field!r}.")
EXPECTED_OBJECT = _("Send the changes as a JSON object of fields.")
DEFAULT_OVER_MAXIMUM = _("The default runtime limit must be at most the class's maximum ({maximum} minutes).")
