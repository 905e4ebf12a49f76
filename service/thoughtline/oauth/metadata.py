"""Discovery documents: RFC 9728 protected-resource metadata per MCP endpoint, RFC 8414 for us.

Built per request from the public origin (THOUGHTLINE_PUBLIC_URL, else the request's own), so the
`resource` of each document is exactly the endpoint's URL and the `issuer` is exactly the `iss` we
put in authorization responses. Served even when GitHub sign-in is not configured: the 401 of the
MCP endpoints points here.
"""

from __future__ import annotations

from mcp.server.auth.routes import build_metadata
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import Response

CACHE = {"Cache-Control": "public, max-age=300"}
AUTH_METHODS = ["none", "client_secret_post", "client_secret_basic"]


def authorization_server_metadata(issuer: str) -> OAuthMetadata:
    """RFC 8414 metadata: the SDK's defaults plus what we add (CIMD, RFC 9207 iss, public clients)."""
    metadata = build_metadata(
        AnyHttpUrl(issuer),
        service_documentation_url=None,
        client_registration_options=ClientRegistrationOptions(enabled=True),
        revocation_options=RevocationOptions(enabled=True),
    )
    # Re-validated from plain strings: a bare AnyHttpUrl renders "https://host/" while the models
    # preserve "https://host", and RFC 8414 §3.3 / RFC 9207 compare the issuer as an exact string.
    return OAuthMetadata.model_validate(
        {
            **metadata.model_dump(mode="json", exclude_none=True),
            "issuer": issuer,
            "token_endpoint_auth_methods_supported": AUTH_METHODS,
            "revocation_endpoint_auth_methods_supported": AUTH_METHODS,
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
        }
    )


def protected_resource_metadata(resource: str, issuer: str) -> ProtectedResourceMetadata:
    """RFC 9728 metadata for one MCP endpoint."""
    return ProtectedResourceMetadata.model_validate(
        {
            "resource": resource,
            "authorization_servers": [issuer],
            "resource_name": "Thoughtline",
            "bearer_methods_supported": ["header"],
        }
    )


def json_document(model: OAuthMetadata | ProtectedResourceMetadata, request: Request) -> Response:
    """The model as JSON without null members, cacheable briefly."""
    del request
    return Response(model.model_dump_json(exclude_none=True), media_type="application/json", headers=CACHE)
