"""Walk the audit chain, check it against the signed heads; exit 1 when the chain was tampered with."""
import sys

from django.core.management.base import BaseCommand

from audit.chain.verify import audit_chain_verify


class Command(BaseCommand):
    help = "Verify the audit event hash chain against its signed heads (database and export); non-zero exit on tampering."

    def add_arguments(self, parser):
        parser.add_argument("--export-dir", help="folder of exported heads (default: AUDIT_SEAL_EXPORT_DIR)")

    def handle(self, *args, **options):
        report = audit_chain_verify(export_dir=options["export_dir"])
        if report.ok:
            self.stdout.write(report.as_text())
            return
        self.stderr.write(report.as_text())
        sys.exit(1)
