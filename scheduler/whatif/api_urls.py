from django.urls import path

from scheduler.whatif import api

urlpatterns = [
    path("what-if/", api.WhatIfListView.as_view(), name="api-whatif"),
    path("what-if/sacct/", api.WhatIfSacctView.as_view(), name="api-whatif-sacct"),
    path("what-if/<int:run_id>/", api.WhatIfDetailView.as_view(), name="api-whatif-detail"),
    path("what-if/<int:run_id>/attach/", api.WhatIfAttachView.as_view(), name="api-whatif-attach"),
]
