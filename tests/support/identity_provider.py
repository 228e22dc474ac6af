"""A real OpenID Connect identity provider on 127.0.0.1, as far as Iris sees one: a discovery document
and a JWKS over HTTP with ``Cache-Control``, counting how often each is fetched, and signing tokens with
its RS256, ES256 and EdDSA keys. Keys can be added and removed (rotation) and the server stopped (down)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey


class IdentityProvider:
    """The provider's state: its keys, its cache lifetime, and the fetches it has answered."""

    def __init__(self, *, max_age: int = 300, audience: str = "iris-api") -> None:
        self.max_age = max_age
        self.audience = audience
        self.base = ""
        self.keys: dict[str, tuple[str, PrivateKey]] = {}
        self.fetches = {"discovery": 0, "jwks": 0}
        self.lock = threading.Lock()

    @property
    def issuer(self) -> str:
        return self.base + "/"

    def add_key(self, kid: str, alg: str) -> None:
        private: PrivateKey
        if alg == "RS256":
            private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        elif alg == "ES256":
            private = ec.generate_private_key(ec.SECP256R1())
        else:
            private = ed25519.Ed25519PrivateKey.generate()
        with self.lock:
            self.keys[kid] = (alg, private)

    def remove_key(self, kid: str) -> None:
        with self.lock:
            del self.keys[kid]

    def jwks(self) -> dict[str, Any]:
        with self.lock:
            listed = [public_jwk(kid, alg, private) for kid, (alg, private) in self.keys.items()]
        return {"keys": listed}

    def claims(self, **overrides: object) -> dict[str, object]:
        now = int(time.time())
        claims: dict[str, object] = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": "idp-user-1",
            "iat": now,
            "exp": now + 600,
        }
        claims.update(overrides)
        return {name: value for name, value in claims.items() if value is not None}

    def token(self, kid: str, **claims: object) -> str:
        """A token signed with key ``kid`` (its own algorithm), with :meth:`claims` and ``claims``."""
        alg, private = self.keys[kid]
        return jwt.encode(self.claims(**claims), private, algorithm=alg, headers={"kid": kid})

    def public_pem(self, kid: str) -> bytes:
        from cryptography.hazmat.primitives import serialization

        _, private = self.keys[kid]
        return private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


def public_jwk(kid: str, alg: str, private: PrivateKey) -> dict[str, Any]:
    public = private.public_key()
    jwk: dict[str, Any]
    if isinstance(public, rsa.RSAPublicKey):
        jwk = RSAAlgorithm.to_jwk(public, as_dict=True)
    elif isinstance(public, ec.EllipticCurvePublicKey):
        jwk = ECAlgorithm.to_jwk(public, as_dict=True)
    else:
        jwk = OKPAlgorithm.to_jwk(public, as_dict=True)
    return {**jwk, "kid": kid, "alg": alg, "use": "sig"}


def _handler(provider: IdentityProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/.well-known/openid-configuration":
                provider.fetches["discovery"] += 1
                body = {"issuer": provider.issuer, "jwks_uri": provider.base + "/keys"}
            elif self.path in ("/keys", "/auth/v1/.well-known/jwks.json"):  # the latter: Supabase's path
                provider.fetches["jwks"] += 1
                body = provider.jwks()
            else:
                self.send_error(404)
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("cache-control", f"public, max-age={provider.max_age}")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            return

    return Handler


@contextmanager
def serve_identity_provider(provider: IdentityProvider) -> Iterator[ThreadingHTTPServer]:
    """Serve ``provider`` on a free loopback port until the block ends (or the server is shut down)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(provider))
    provider.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        stop(server)
        thread.join()


def stop(server: ThreadingHTTPServer) -> None:
    """Stop answering and close the socket: from now on a fetch is refused (the provider is down)."""
    if server.socket.fileno() != -1:
        server.shutdown()
        server.server_close()
