"""API shapes of notice channels; a target is written in full but only ever read back masked."""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from scheduler.notices.channels import target_display
from scheduler.notices.models import NoticeChannel


class NoticeChannelSerializer(serializers.ModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    target = serializers.SerializerMethodField(help_text="Addresses, or the webhook URL with its token masked.")
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = NoticeChannel
        fields = ["id", "tenant", "kind", "name", "target", "enabled", "created_by", "created_at"]

    @extend_schema_field(OpenApiTypes.STR)
    def get_target(self, channel: NoticeChannel) -> str:
        return target_display(kind=channel.kind, target=channel.target)


class NoticeChannelCreateSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=NoticeChannel.Kind.choices)
    name = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    target = serializers.CharField(help_text="Comma-separated addresses for email, else an apprise URL: feishu://, "
                                             "lark://, dingtalk://, wecombot://, slack://, json:// or jsons://.")
    enabled = serializers.BooleanField(default=True)
