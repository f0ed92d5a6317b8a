"""Walk the audit chain and report the first broken row; exit 1 when the chain was tampered with."""
import sys

from django.core.management.base import BaseCommand

from audit.chain.hashing import audit_chain_verify


class Command(BaseCommand):
    help = "Verify the audit event hash chain; non-zero exit on tampering."

    def handle(self, *args, **options):
        report = audit_chain_verify()
        if report.ok:
            self.stdout.write(report.as_text())
            return
        self.stderr.write(report.as_text())
        sys.exit(1)
