from django.urls import path

from scheduler.whatif import views

urlpatterns = [
    path("what-if/", views.whatif_page, name="whatif"),
    path("what-if/sacct/", views.whatif_import_sacct, name="whatif-sacct"),
    path("what-if/<int:run_id>/", views.whatif_detail, name="whatif-detail"),
    path("what-if/<int:run_id>/attach/", views.whatif_attach, name="whatif-attach"),
    path("what-if/switch/", views.whatif_simulate_switch, name="whatif-simulate-switch"),
    path("what-if/quota-requests/<int:pk>/", views.whatif_simulate_request, name="whatif-simulate-request"),
]
