"""The monthly report as a PDF beside CSV and XLSX: downloaded from the page's own link in English and
zh-Hans, and read back with pypdf: the Chinese labels are text (a CJK font embedded), not empty boxes."""
import html
import io
import re

import pytest
from pypdf import PdfReader

from quotas.common.charts import FILLS, text_width
from quotas.models import Membership
from tests import factories
from tests import live_month as lm
from tests.test_report_downloads import download_links, page

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("language, texts", [
    ("en", ["Monthly usage report", "Alpha team", "Training", "Experiment", "Top wait reasons",
            "Chargeback units"]),
    ("zh-hans", ["月度用量报表", "Alpha team", "训练", "实验", "主要等待原因", "计费单位"]),
])
def test_the_report_downloads_as_a_pdf_in_the_readers_language(settings, language, texts):
    month = lm.build(settings)
    lead = factories.member(month.alpha, "alpha-lead", Membership.Role.TENANT_ADMIN)
    client = page(lead, language)
    report_page = client.get("/reports/?month=2026-03").content.decode()
    links = download_links(report_page)
    response = client.get(links["PDF"])
    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    assert response["Content-Disposition"] == 'attachment; filename="usage-alpha-2026-03.pdf"'
    reader = PdfReader(io.BytesIO(response.content))
    text = re.sub(r"\s+", " ", " ".join(p.extract_text() for p in reader.pages))
    for expected in texts:
        assert expected in text, (expected, text[:800])
    assert "QUOTA_EXCEEDED" not in text and "Download" not in text and "下载" not in text  # no links in print
    fonts = {str(f.get_object()["/BaseFont"]) for p in reader.pages for f in p["/Resources"]["/Font"].values()}
    assert any("Noto-Sans-CJK-SC" in name for name in fonts), fonts  # Debian's fonts-noto-cjk, embedded
    # The charts' bars are painted in their colours (WeasyPrint ignores `fill` in stylesheets: they printed
    # black), and every chart label fits the label column left of its bar (they were clipped).
    painted = b" ".join(p.get_contents().get_data() for p in reader.pages)
    for colour in FILLS.values():
        rgb = " ".join(f"{int(colour[i:i + 2], 16) / 255:.6f}".rstrip("0").rstrip(".") for i in (1, 3, 5))
        assert f"{rgb} rg".encode() in painted, (colour, rgb)
    labels = re.findall(r'<text x="(\d+)"[^>]*class="chart-label"[^>]*>([^<]+)</text>', report_page)
    assert labels and all(text_width(html.unescape(label)) <= int(x) for x, label in labels), labels
