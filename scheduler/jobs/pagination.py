"""The job API's page bounds: a client may ask for smaller pages, never for a bigger one than MAX_LIMIT."""
from rest_framework.pagination import LimitOffsetPagination

MAX_LIMIT = 500


class BoundedPagination(LimitOffsetPagination):
    default_limit = 100
    max_limit = MAX_LIMIT
