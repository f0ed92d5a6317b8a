from django.urls import path

from portal.accounts.sso import api

urlpatterns = [
    path("sso/group-rules/", api.GroupRuleListView.as_view(), name="api-sso-group-rules"),
    path("sso/group-rules/<int:pk>/", api.GroupRuleDetailView.as_view(), name="api-sso-group-rule"),
]
