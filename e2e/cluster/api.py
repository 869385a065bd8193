"""A small client for the rig's API server (bearer token, loopback, self-signed serving certificate)."""

from __future__ import annotations

import http.client
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

from e2e.cluster.errors import RigError


class ApiError(Exception):
    """A non-2xx answer, with the server's status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


class Api:
    def __init__(self, server: str, token: str) -> None:
        self.server = server
        self.token = token
        # The rig's kube-apiserver self-signs its serving certificate on 127.0.0.1.
        self._tls = ssl.create_default_context()
        self._tls.check_hostname = False
        self._tls.verify_mode = ssl.CERT_NONE

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        request = urllib.request.Request(self.server + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, context=self._tls, timeout=30) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                message = json.loads(raw).get("message", raw.decode())
            except ValueError:
                message = raw.decode(errors="replace")
            raise ApiError(error.code, message) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as error:
            # A server killed mid-request (a fault scenario restarts it) closes the connection without an answer.
            raise RigError(f"API server {self.server} unreachable: {error}") from None
        return json.loads(raw) if raw else None

    def watch(self, path: str, resource_version: str, timeout_s: int = 30) -> Iterator[dict[str, Any]]:
        """The watch events of a collection from `resource_version` on (`{"type", "object"}` each), as the server
        streams them, until it ends the stream after `timeout_s` (the caller lists and watches again)."""
        joiner = "&" if "?" in path else "?"
        query = (
            f"{joiner}watch=1&allowWatchBookmarks=true&resourceVersion={resource_version}&timeoutSeconds={timeout_s}"
        )
        request = urllib.request.Request(self.server + path + query)
        request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, context=self._tls, timeout=timeout_s + 30) as response:
                for line in response:
                    if line.strip():
                        yield json.loads(line)
        except urllib.error.HTTPError as error:
            raise ApiError(error.code, error.read().decode(errors="replace")) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as error:
            raise RigError(f"API server {self.server} unreachable while watching {path}: {error}") from None

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def items(self, path: str) -> list[dict[str, Any]]:
        return self.get(path)["items"]

    def merge_patch(self, path: str, patch: dict[str, Any]) -> Any:
        return self.request("PATCH", path, patch, "application/merge-patch+json")

    def ready(self) -> bool:
        try:
            self.request("GET", "/readyz")
        except (ApiError, RigError):
            return False
        except ValueError:  # "ok" is not JSON: the server answered 200
            return True
        return True
