"""The one pagination of every API list: limit/offset with a maximum page size."""
from rest_framework.pagination import LimitOffsetPagination

MAX_PAGE_SIZE = 500


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    # A larger ?limit is capped, not refused, as DRF does for max_limit.
    max_limit = MAX_PAGE_SIZE
