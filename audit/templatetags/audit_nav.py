"""Navigation links to the report and audit pages, shown only to those who may open them."""
from django import template

from audit.reports.access import may_read_audit

register = template.Library()


@register.inclusion_tag("audit/_nav.html", takes_context=True)
def audit_nav_links(context):
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"show_audit": False, "authenticated": False}
    return {"show_audit": may_read_audit(user), "authenticated": True}
