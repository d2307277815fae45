"""Admin of webhook endpoints and their deliveries. Endpoints are created, changed, deleted,
tested, replayed and their secret rotated only through webhooks.services (so the URL checks, the
game's limit and the audit trail hold here as in the API); deliveries and their attempts are
read-only, and replayed through the service. The secret is shown once, when it is made."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable
from typing import Any, TypeVar
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from core import clock, outbox
from core.audit import Actor
from core.errors import REDIS_DOWN_MESSAGE, REDIS_ERRORS, ServiceError

from . import selectors
from .models import Attempt, Delivery, Endpoint
from .services import endpoints as endpoint_services
from .services import replay as replay_services

# An endpoint's page shows its newest deliveries; the rest are in the deliveries' list, filtered to it.
RECENT_DELIVERIES_N = 20
# "Replay failed deliveries" takes those of events from this long ago on.
REPLAY_WINDOW = dt.timedelta(hours=24)
REPLAY_PERMISSION = "webhooks.change_delivery"

Item = TypeVar("Item", Endpoint, Delivery)


def _when(instant: dt.datetime | None) -> str:
    return clock.shown(instant) if instant is not None else "—"


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _each(
    model_admin: admin.ModelAdmin[Any],
    request: HttpRequest,
    items: Iterable[Item],
    act: Callable[[Item], str | None],
    name: Callable[[Item], str],
) -> int:
    """Run ``act`` on each item; what it says as a success, its refusals as errors (grouped, so
    a hundred refused deliveries make one message). Redis down stops the rest. Returns how many
    were done."""
    done = 0
    refused: dict[str, list[str]] = {}
    for item in items:
        try:
            said = act(item)
        except ServiceError as error:
            refused.setdefault(error.message, []).append(name(item))
            continue
        except REDIS_ERRORS:
            stopped = f"Stopped at {name(item)}: {done} done before it, the rest not tried."
            model_admin.message_user(request, f"{REDIS_DOWN_MESSAGE} {stopped}", messages.ERROR)
            break
        done += 1
        if said:
            model_admin.message_user(request, said, messages.SUCCESS)
    for why, names in refused.items():
        model_admin.message_user(request, f"Not done for {', '.join(names)}: {why}", messages.ERROR)
    return done


def _with_acts(extra_context: dict[str, Any] | None, acts: list[tuple[str, str]]) -> dict[str, Any]:
    """The change page's context with its acts: (URL, label) pairs, shown beside History."""
    return {**(extra_context or {}), "acts": acts}


# ---------------------------------------------------------------------------- endpoints


def _checked(check: Callable[[Any], Any], value: Any) -> Any:
    """A field through the service's own check, its refusal as the field's error."""
    try:
        return check(value)
    except ServiceError as error:
        raise forms.ValidationError(error.message) from None


class EndpointForm(forms.ModelForm):
    event_types = forms.MultipleChoiceField(
        choices=[(name, name) for name in sorted(outbox.EVENTS)],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="The event types it receives; none checked: every type.",
    )

    class Meta:
        model = Endpoint
        fields = ("game", "url", "description", "event_types", "enabled")
        labels = {"url": "URL"}
        widgets = {"url": forms.TextInput(attrs={"class": "vTextField", "style": "width: 40em"})}

    def clean_url(self) -> str:
        return str(_checked(endpoint_services.url_checked, self.cleaned_data["url"]))

    def clean_description(self) -> str:
        return str(_checked(endpoint_services.description_checked, self.cleaned_data["description"]))

    def clean_event_types(self) -> list[str]:
        return list(_checked(endpoint_services.event_types_checked, self.cleaned_data["event_types"]))


# What each endpoint act is called, in the list's actions and as a button on the endpoint's page.
ENDPOINT_ACTS = {
    "test": "Send a test event",
    "replay": "Replay failed deliveries of the last 24 hours",
    "rotate": "Rotate secret",
    "enable": "Enable",
    "disable": "Disable",
}
HEALTH_FIELDS = (
    "last_success_at",
    "last_failure_at",
    "failing_since",
    "failure_streak",
    "last_error",
    "disabled_reason",
    "disabled_at",
)


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin):
    """A game's webhook endpoints with their health; each act through webhooks.services."""

    form = EndpointForm
    change_form_template = "admin/webhooks/endpoint/change_form.html"
    list_display = (
        "endpoint_id",
        "game",
        "url",
        "enabled",
        "last_success_at",
        "failure_streak",
        "failing_since",
        "disabled_reason",
    )
    list_filter = ("enabled", "game")
    search_fields = ("url", "endpoint_id")
    list_select_related = ("game",)
    actions = ("send_test", "replay_failed", "rotate_secret", "enable", "disable")

    def get_fieldsets(self, request: HttpRequest, obj: Endpoint | None = None) -> Any:
        if obj is None:
            return ((None, {"fields": ("game", "url", "description", "event_types", "enabled")}),)
        return (
            (None, {"fields": ("endpoint_id", "game", "url", "description", "event_types", "enabled")}),
            ("Health", {"fields": HEALTH_FIELDS}),
            ("Secret", {"fields": ("secret_state", "created_at", "updated_at")}),
            ("Deliveries", {"fields": ("recent_deliveries",)}),
        )

    def get_readonly_fields(self, request: HttpRequest, obj: Endpoint | None = None) -> tuple[str, ...]:
        if obj is None:
            return ()
        # The game: an endpoint's deliveries are of its game's events.
        fixed = ("endpoint_id", "game", "created_at", "updated_at", "secret_state", "recent_deliveries")
        return fixed + HEALTH_FIELDS

    @admin.display(description="secret")
    def secret_state(self, obj: Endpoint) -> str:
        shown = "Shown only when it was made (created, or rotated): rotate it for a new one."
        until = obj.previous_secret_until
        if obj.previous_secret and until is not None and until > clock.now():
            return f"{shown} The previous secret also signs until {clock.shown(until)}."
        return shown

    @admin.display(description="recent deliveries")
    def recent_deliveries(self, obj: Endpoint) -> SafeString | str:
        total, newest = selectors.deliveries_page(
            endpoint=obj, status=None, since=None, offset=0, limit=RECENT_DELIVERIES_N
        )
        if not total:
            return "None yet."
        rows = format_html_join(
            "",
            '<tr><td><a href="{}">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>',
            (
                (
                    reverse("admin:webhooks_delivery_change", args=[d.pk]),
                    _when(d.created_at),
                    d.event_type,
                    d.event_id,
                    d.status,
                    d.attempts,
                    d.last_status_code or "—",
                    _when(d.next_attempt_at),
                )
                for d in newest
            ),
        )
        every = reverse("admin:webhooks_delivery_changelist") + "?" + urlencode({"endpoint__id__exact": obj.pk})
        return format_html(
            "<table><thead><tr><th>created</th><th>event type</th><th>event id</th><th>status</th><th>attempts</th>"
            "<th>last status</th><th>next attempt</th></tr></thead><tbody>{}</tbody></table>"
            '<p>The newest {} of {}. <a href="{}">Every delivery of this endpoint</a></p>',
            rows,
            len(newest),
            f"{total:,}",
            every,
        )

    # ------------------------------------------------------------ create, change, delete

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        allowed = ENDPOINT_ACTS.items() if self.has_change_permission(request) else ()
        acts = [(reverse("admin:webhooks_endpoint_act", args=[object_id, act]), label) for act, label in allowed]
        return super().change_view(request, object_id, form_url, _with_acts(extra_context, acts))

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        # The form checked the fields; what only the service can refuse (the game's limit) is
        # raised from save_model, inside the view's transaction, which it rolls back.
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ServiceError as error:
            self.message_user(request, error.message, messages.ERROR)
        except REDIS_ERRORS:
            self.message_user(request, REDIS_DOWN_MESSAGE, messages.ERROR)
        return HttpResponseRedirect(request.get_full_path())

    def save_model(self, request: HttpRequest, obj: Endpoint, form: forms.ModelForm, change: bool) -> None:
        by = Actor.of(request.user)
        if change:
            changes = {name: form.cleaned_data[name] for name in form.changed_data}
            if changes:
                endpoint_services.endpoint_update(endpoint=obj, changes=changes, now=clock.now(), by=by)
            return
        created = endpoint_services.endpoint_create(
            game=obj.game,
            url=obj.url,
            description=obj.description,
            event_types=obj.event_types,
            enabled=obj.enabled,
            now=clock.now(),
            by=by,
        )
        # The admin goes on (its log, its redirect) with the row the service made.
        obj.pk = created.pk
        obj.refresh_from_db()
        self.message_user(
            request,
            f"Secret of {created.endpoint_id}: {created.secret} — copy it now, it will not be shown again.",
            messages.SUCCESS,
        )

    def delete_model(self, request: HttpRequest, obj: Endpoint) -> None:
        endpoint_services.endpoint_delete(endpoint=obj, by=Actor.of(request.user))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Endpoint]) -> None:
        by = Actor.of(request.user)
        for endpoint in queryset.select_related("game"):
            endpoint_services.endpoint_delete(endpoint=endpoint, by=by)

    def get_deleted_objects(
        self, objs: Any, request: HttpRequest
    ) -> tuple[list[Any], dict[str, int], set[str], list[Any]]:
        # What goes, counted: Django's own list would name every delivery and attempt (thousands),
        # and ask for the delete permission on those read-only models.
        chosen = list(objs)
        deliveries = Delivery.objects.filter(endpoint__in=chosen).count()
        counts = {"endpoints": len(chosen), "deliveries, with their attempts": deliveries}
        return [str(e) for e in chosen], counts, set(), []

    # ------------------------------------------------------------------------ acts

    def _act(self, request: HttpRequest, act: str, chosen: Iterable[Endpoint]) -> int:
        by = Actor.of(request.user)
        do: dict[str, Callable[[Endpoint], str | None]] = {
            "test": lambda e: _send_test(e, by),
            "replay": lambda e: _replay_failed(e, by),
            "rotate": lambda e: _rotate(e, by),
            "enable": lambda e: _set_enabled(e, True, by),
            "disable": lambda e: _set_enabled(e, False, by),
        }
        return _each(self, request, chosen, do[act], lambda e: e.endpoint_id)

    def _chosen(self, queryset: QuerySet[Endpoint]) -> QuerySet[Endpoint]:
        # The services read endpoint.game (the event's game, the audit entry's).
        return queryset.select_related("game")

    @admin.action(description=ENDPOINT_ACTS["test"], permissions=["change"])
    def send_test(self, request: HttpRequest, queryset: QuerySet[Endpoint]) -> None:
        self._act(request, "test", self._chosen(queryset))

    @admin.action(description=ENDPOINT_ACTS["replay"], permissions=["change"])
    def replay_failed(self, request: HttpRequest, queryset: QuerySet[Endpoint]) -> None:
        self._act(request, "replay", self._chosen(queryset))

    @admin.action(description=ENDPOINT_ACTS["rotate"], permissions=["change"])
    def rotate_secret(self, request: HttpRequest, queryset: QuerySet[Endpoint]) -> None:
        self._act(request, "rotate", self._chosen(queryset))

    @admin.action(description=ENDPOINT_ACTS["enable"], permissions=["change"])
    def enable(self, request: HttpRequest, queryset: QuerySet[Endpoint]) -> None:
        self._act(request, "enable", self._chosen(queryset))

    @admin.action(description=ENDPOINT_ACTS["disable"], permissions=["change"])
    def disable(self, request: HttpRequest, queryset: QuerySet[Endpoint]) -> None:
        self._act(request, "disable", self._chosen(queryset))

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view(self.act_view)
        return [path("<path:object_id>/act/<slug:act>/", view, name="webhooks_endpoint_act"), *super().get_urls()]

    def act_view(self, request: HttpRequest, object_id: str, act: str) -> HttpResponse:
        """The endpoint page's buttons: one act on this endpoint, then back to its page."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if act not in ENDPOINT_ACTS:
            raise Http404(f"No act {act!r}.")
        endpoint = get_object_or_404(self._chosen(self.get_queryset(request)), pk=object_id)
        if not self.has_change_permission(request, endpoint):
            raise PermissionDenied
        self._act(request, act, [endpoint])
        return HttpResponseRedirect(reverse("admin:webhooks_endpoint_change", args=[endpoint.pk]))


def _send_test(endpoint: Endpoint, by: Actor) -> str:
    event = endpoint_services.endpoint_test(endpoint=endpoint, now=clock.now(), by=by)
    return f"Endpoint {endpoint.endpoint_id}: a {event.type} event is on its way (its webhook-id: {event.event_id})."


def _replay_failed(endpoint: Endpoint, by: Actor) -> str:
    now = clock.now()
    count = replay_services.failed_replay(endpoint=endpoint, since=now - REPLAY_WINDOW, until=None, now=now, by=by)
    capped = count >= replay_services.WEBHOOK_REPLAY_MAX
    more = " (the most one replay takes: replay again for the rest)" if capped else ""
    what = _plural(count, "failed delivery", "failed deliveries")
    return f"Endpoint {endpoint.endpoint_id}: {what} of the last 24 hours pending again, due now{more}."


def _rotate(endpoint: Endpoint, by: Actor) -> str:
    rotated = endpoint_services.secret_rotate(endpoint=endpoint, now=clock.now(), by=by)
    until = rotated.previous_secret_until
    grace = f" The previous secret also signs until {clock.shown(until)}." if until is not None else ""
    return f"New secret of {rotated.endpoint_id}: {rotated.secret} — copy it now, it will not be shown again.{grace}"


def _set_enabled(endpoint: Endpoint, enabled: bool, by: Actor) -> str:
    endpoint_services.endpoint_update(endpoint=endpoint, changes={"enabled": enabled}, now=clock.now(), by=by)
    return f"Endpoint {endpoint.endpoint_id}: {'enabled' if enabled else 'disabled'}."


# --------------------------------------------------------------------------- deliveries


class EventTypeFilter(admin.SimpleListFilter):
    """The declared event types (not a DISTINCT over every delivery kept)."""

    title = "event type"
    parameter_name = "event_type"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]) -> list[tuple[str, str]]:
        return [(name, name) for name in sorted(outbox.EVENTS)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset.filter(event_type=self.value()) if self.value() else queryset


def _pre(text: str) -> SafeString:
    return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>', text)


class AttemptInline(admin.TabularInline):
    """Each request of the delivery and what came back (the newest 30 are kept)."""

    model = Attempt
    fields = ("number", "started_at", "outcome", "status_code", "duration", "address", "error", "response", "headers")
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="duration")
    def duration(self, obj: Attempt) -> str:
        return f"{obj.duration_ms} ms"

    @admin.display(description="response body (its first bytes)")
    def response(self, obj: Attempt) -> SafeString | str:
        return _pre(obj.response_body) if obj.response_body else "—"

    @admin.display(description="request headers")
    def headers(self, obj: Attempt) -> SafeString:
        return _pre("\n".join(f"{name}: {value}" for name, value in obj.request_headers.items()))


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    """Each event to each endpoint: read-only (the delivery runs write it), replayed through the
    service (pending again, due now, with the same webhook-id and body)."""

    list_display = (
        "event_type",
        "event_id",
        "endpoint_name",
        "status",
        "attempts",
        "next_attempt_at",
        "last_status_code",
        "created_at",
    )
    list_filter = ("status", EventTypeFilter, "endpoint__game")
    search_fields = ("event_id", "delivery_id", "endpoint__endpoint_id")
    list_select_related = ("endpoint",)
    list_per_page = 100
    # Counting every delivery kept would be the slowest part of a filtered page.
    show_full_result_count = False
    actions = ("replay_deliveries",)
    inlines = (AttemptInline,)
    change_form_template = "admin/webhooks/delivery/change_form.html"
    fields = (
        "delivery_id",
        "endpoint",
        "event_type",
        "event_id",
        "status",
        "attempts",
        "replays",
        "created_at",
        "next_attempt_at",
        "finished_at",
        "last_status_code",
        "last_error",
        "payload_json",
    )
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Deliveries go with their endpoint, or with the prune past WEBHOOK_RETENTION_SECS.
        return False

    @admin.display(description="endpoint", ordering="endpoint__endpoint_id")
    def endpoint_name(self, obj: Delivery) -> str:
        return obj.endpoint.endpoint_id

    def has_replay_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(REPLAY_PERMISSION)

    @admin.display(description="payload")
    def payload_json(self, obj: Delivery) -> SafeString:
        try:
            shown = json.dumps(json.loads(obj.payload), indent=2, ensure_ascii=False)
        except ValueError:  # shown as sent, whatever it is
            shown = obj.payload
        return _pre(shown)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        replay = reverse("admin:webhooks_delivery_replay", args=[object_id])
        acts = [(replay, "Replay")] if self.has_replay_permission(request) else []
        return super().change_view(request, object_id, form_url, _with_acts(extra_context, acts))

    def _replay(self, request: HttpRequest, chosen: Iterable[Delivery]) -> int:
        by = Actor.of(request.user)

        def act(delivery: Delivery) -> None:
            replay_services.delivery_replay(delivery=delivery, now=clock.now(), by=by)

        done = _each(self, request, chosen, act, lambda d: d.delivery_id)
        if done:
            what = _plural(done, "delivery", "deliveries")
            self.message_user(request, f"Replayed {what}: pending again, due now.", messages.SUCCESS)
        return done

    @admin.action(description="Replay", permissions=["replay"])
    def replay_deliveries(self, request: HttpRequest, queryset: QuerySet[Delivery]) -> None:
        # The service reads delivery.endpoint (is it enabled?) and its game.
        self._replay(request, queryset.select_related("endpoint", "endpoint__game").order_by("id"))

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view(self.replay_view)
        return [path("<path:object_id>/replay/", view, name="webhooks_delivery_replay"), *super().get_urls()]

    def replay_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The delivery page's button: replay it, then back to its page."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_replay_permission(request):
            raise PermissionDenied
        delivery = get_object_or_404(Delivery.objects.select_related("endpoint", "endpoint__game"), pk=object_id)
        self._replay(request, [delivery])
        return HttpResponseRedirect(reverse("admin:webhooks_delivery_change", args=[delivery.pk]))
