"""The consent page: GET shows who is asking, POST (CSRF-protected) sends the person to GitHub.

Consent is asked on every authorization and is bound to the one request it was shown for, so a
second client never rides on an earlier approval (the confused-deputy problem of proxies that sit
in front of an upstream identity provider which remembers its own consent).
"""

from __future__ import annotations

import secrets

from starlette.requests import Request
from starlette.responses import Response

from thoughtline.oauth.cimd import CimdError
from thoughtline.oauth.context import CSRF_COOKIE, DoorContext
from thoughtline.oauth.github_leg import redirect_to_github
from thoughtline.oauth.pages import consent_page, error_page
from thoughtline.oauth.provider import PENDING_TTL_SECONDS
from thoughtline.oauth.signing import CSRF, PENDING, InvalidSignedValue, digest, same
from thoughtline.oauth.urls import CONSENT_PATH, granted_resources, origin_of

RESTART = "Go back to the app you are connecting and start the connection again."


def _expired_link() -> Response:
    return error_page("This sign-in link cannot be used", f"It was altered or has expired. {RESTART}", status=400)


async def show_consent(ctx: DoorContext, request: Request) -> Response:
    """GET /consent?request=…: render the consent page for one signed authorization request."""
    signer = await ctx.provider.signer()
    blob = request.query_params.get("request", "")
    try:
        pending = signer.loads(PENDING, blob)
    except InvalidSignedValue:
        return _expired_link()
    try:
        client = await ctx.provider.get_client(str(pending["client_id"]))
    except CimdError as exc:
        return error_page("This app cannot be identified", f"{exc}. {RESTART}", status=400)
    if client is None:
        return error_page("Unknown app", f"The app is no longer registered here. {RESTART}", status=400)
    resources = granted_resources(pending.get("resource"), ctx.origin(request))
    if resources is None:
        return ctx.back_to_client(
            request,
            pending,
            error="invalid_target",
            error_description="resource must be this server's /mcp or /mcp-compat URL",
        )
    nonce = secrets.token_urlsafe(24)
    csrf = signer.dumps(CSRF, {"n": digest(nonce), "r": digest(blob)}, PENDING_TTL_SECONDS)
    response = consent_page(
        client_name=client.client_name or "An unnamed app",
        client_id=client.client_id,
        redirect_uri=str(pending["redirect_uri"]),
        resources=resources,
        request_blob=blob,
        csrf=csrf,
        form_action=(ctx.github.origin, origin_of(str(pending["redirect_uri"]))),
    )
    response.set_cookie(
        CSRF_COOKIE,
        nonce,
        max_age=int(PENDING_TTL_SECONDS),
        path=CONSENT_PATH,
        httponly=True,
        samesite="strict",
        secure=ctx.secure_cookies(request),
    )
    return response


async def submit_consent(ctx: DoorContext, request: Request) -> Response:
    """POST /consent: verify the form came from our page in this browser, then go to GitHub."""
    origin = request.headers.get("origin")
    if origin is not None and origin != ctx.origin(request):
        return error_page("Request refused", "The consent form was submitted from another site.", status=403)
    form = await request.form()
    blob, csrf = str(form.get("request", "")), str(form.get("csrf", ""))
    signer = await ctx.provider.signer()
    try:
        pending = signer.loads(PENDING, blob)
        proof = signer.loads(CSRF, csrf)
    except InvalidSignedValue:
        return _expired_link()
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if not (cookie and same(digest(cookie), str(proof["n"])) and same(digest(blob), str(proof["r"]))):
        return error_page(
            "Request refused",
            f"The consent form could not be verified in this browser (cookies must be enabled). {RESTART}",
            status=403,
        )
    if form.get("decision") != "allow":
        response: Response = ctx.back_to_client(
            request, pending, error="access_denied", error_description="the user declined"
        )
    else:
        response = await redirect_to_github(ctx, request, pending)
    response.delete_cookie(CSRF_COOKIE, path=CONSENT_PATH)
    return response
