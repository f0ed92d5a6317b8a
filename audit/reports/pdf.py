"""The monthly report as a PDF: the report page's own body (one template for screen, print and PDF), drawn
by WeasyPrint with the page's stylesheets read from disk (never fetched over HTTP from ourselves)."""
from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.utils import timezone
from weasyprint import CSS, HTML

STYLESHEETS = ("portal/portal.css", "audit/audit.css", "audit/print.css", "audit/pdf.css")


def report_pdf(request, context: dict) -> bytes:
    html = render_to_string("audit/report_pdf.html", {**context, "now": timezone.now()}, request)
    return HTML(string=html).write_pdf(stylesheets=[CSS(filename=finders.find(path)) for path in STYLESHEETS])
