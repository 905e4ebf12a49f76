"""GET /callback: GitHub sends the person back; check who they are and issue our own code.

Order matters: the signed state and its browser cookie are checked before GitHub is called, the
allowlist before anything is stored, and GitHub's token never outlives `identify`.
"""

from __future__ import annotations

import logging

from starlette.requests import Request
from starlette.responses import Response

from thoughtline.logsafe import log_safe
from thoughtline.oauth.context import SIGNIN_COOKIE, DoorContext
from thoughtline.oauth.github import GitHubAccount, GitHubError
from thoughtline.oauth.library_signin import is_library_sign_in
from thoughtline.oauth.pages import error_page
from thoughtline.oauth.provider import CODE_TTL_SECONDS
from thoughtline.oauth.records import OwnerSetting, new_secret
from thoughtline.oauth.signing import GITHUB_STATE, InvalidSignedValue, digest, same
from thoughtline.oauth.urls import CALLBACK_PATH, granted_resources

logger = logging.getLogger(__name__)

RESTART = "Go back to the app you are connecting and start the connection again."


async def github_callback(ctx: DoorContext, request: Request) -> Response:
    """Finish the GitHub leg and redirect to the client with a single-use authorization code."""
    signer = await ctx.provider.signer()
    try:
        payload = signer.loads(GITHUB_STATE, request.query_params.get("state", ""))
    except InvalidSignedValue:
        return error_page("Sign-in could not be completed", f"The sign-in state is invalid or expired. {RESTART}", 400)
    cookie = request.cookies.get(SIGNIN_COOKIE, "")
    if not (cookie and same(digest(cookie), str(payload["b"]))):
        return error_page(
            "Sign-in could not be completed",
            f"This sign-in was started in another browser, or its cookie was blocked. {RESTART}",
            400,
        )
    pending: dict[str, object] = payload["p"]
    if request.query_params.get("error") and is_library_sign_in(pending):
        response: Response = error_page(
            "Sign-in cancelled", "GitHub sign-in was cancelled; open /library to try again.", 400
        )
    elif request.query_params.get("error"):
        response = ctx.back_to_client(
            request, pending, error="access_denied", error_description="GitHub sign-in was cancelled"
        )
    else:
        response = await _finish(ctx, request, pending)
    response.delete_cookie(SIGNIN_COOKIE, path=CALLBACK_PATH)
    return response


async def _finish(ctx: DoorContext, request: Request, pending: dict[str, object]) -> Response:
    code = request.query_params.get("code")
    if not code:
        return error_page("Sign-in could not be completed", f"GitHub returned no code. {RESTART}", 400)
    try:
        account = await ctx.github.identify(code, ctx.callback_url(request))
    except GitHubError as exc:
        return error_page("GitHub sign-in failed", f"{exc}. {RESTART}", 502)
    if not ctx.provider.login_allowed(account.login):
        logger.info("oauth sign-in refused: GitHub account id %s is not allowlisted", account.id)
        hint = (
            "This server allows no GitHub accounts yet: its ALLOWED_GITHUB_LOGIN setting is empty."
            if not ctx.settings.allowed_github_logins
            else "Ask the operator to add it to ALLOWED_GITHUB_LOGIN."
        )
        return error_page("Access denied", f"The GitHub account {account.login!r} may not use this server. {hint}", 403)
    if is_library_sign_in(pending):
        if ctx.library_signed_in is None:
            return error_page("Sign-in could not be completed", "This server has no library pages.", 404)
        user_key = await _user_key(ctx, account)
        logger.info("library sign-in: GitHub account id %s", account.id)
        return await ctx.library_signed_in(request, user_key, account.login)
    resources = granted_resources(_str(pending.get("resource")), ctx.origin(request))
    if resources is None:
        return ctx.back_to_client(request, pending, error="invalid_target", error_description="unknown resource")
    now = ctx.clock.now()
    user_key = await _user_key(ctx, account)
    ours = new_secret("tlc_")
    scopes = pending.get("scopes")
    await ctx.provider.store.create_grant(
        code=ours,
        client_id=str(pending["client_id"]),
        user_key=user_key,
        account_id=account.id,
        login=account.login,
        resources=resources,
        scopes=tuple(str(s) for s in scopes) if isinstance(scopes, list) else (),
        redirect_uri=str(pending["redirect_uri"]),
        redirect_explicit=bool(pending.get("redirect_explicit")),
        code_challenge=str(pending["code_challenge"]),
        now=now,
        code_ttl=CODE_TTL_SECONDS,
    )
    logger.info("oauth sign-in: GitHub account id %s granted access to a client", account.id)
    return ctx.back_to_client(request, pending, code=ours)


async def _user_key(ctx: DoorContext, account: GitHubAccount) -> str:
    """The account's store key (the owner's, or its own), pinning the owner on first sign-in."""
    owner = OwnerSetting(login=ctx.settings.owner_login, account_id=ctx.settings.owner_id)
    user_key, pin = await ctx.provider.store.user_key_for(account.id, account.login, owner, ctx.clock.now())
    if pin is not None:
        named = f"THOUGHTLINE_OWNER_ID={owner.account_id}" if owner.account_id else f"THOUGHTLINE_OWNER={owner.login}"
        if pin.previous is None:
            logger.warning("owner pinned: GitHub account id %s is now the owner (%s)", pin.account_id, log_safe(named))
        else:
            logger.warning(
                "owner re-pinned: GitHub account id %s is now the owner (%s); account id %s keeps its own store",
                pin.account_id,
                log_safe(named),
                pin.previous,
            )
    return user_key


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None
