"""Navigation links to the report and audit pages, shown only to those who may open them."""
from django import template

from quotas.reader import reader

register = template.Library()


@register.inclusion_tag("audit/_nav.html", takes_context=True)
def audit_nav_links(context):
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"show_audit": False, "authenticated": False}
    # may_read_audit(user) (audit/reports/access.py), from the rights the navigation read already.
    return {"show_audit": reader(request).may_read_audit, "authenticated": True}
